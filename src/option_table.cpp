#include "option_table.hpp"

#include "cli11.hpp"

#include <algorithm>
#include <cstdlib>
#include <type_traits>

#include "errors.hpp"

namespace redlock {
namespace {

OptionSpec spec_of(std::string_view names, const char* env, bool takes_value) {
    OptionSpec spec;
    spec.env = env ? env : "";
    spec.takes_value = takes_value;
    while (!names.empty()) {
        std::size_t comma = names.find(',');
        std::string_view name = names.substr(0, comma);
        if (name.starts_with("--"))
            spec.long_name = name.substr(2);
        else if (name.starts_with("-"))
            spec.short_name = name.substr(1);
        names = comma == std::string_view::npos ? std::string_view() : names.substr(comma + 1);
    }
    return spec;
}

}  // namespace

template <class T>
void OptionTable::add(const char* names, T& target, const char* description, const char* env) {
    // A flag is a bool; every other option takes a value.
    OptionSpec spec = spec_of(names, env, !std::is_same_v<T, bool>);
    if (catalog_) {
        catalog_->push_back(spec);
        return;
    }
    if (wanted_ && !wanted_->contains(spec.key())) return;
    CLI::Option* opt = nullptr;
    if constexpr (std::is_same_v<T, bool>)
        opt = app_->add_flag(names, target, description);
    else
        opt = app_->add_option(names, target, description);
    if (env) opt->envname(env);
    if (!group_.empty()) opt->group(group_);
}

void OptionTable::option(const char* names, std::string& target, const char* description,
                         const char* env) {
    add(names, target, description, env);
}

void OptionTable::option(const char* names, std::vector<std::string>& target,
                         const char* description, const char* env) {
    add(names, target, description, env);
}

void OptionTable::flag(const char* names, bool& target, const char* description, const char* env) {
    add(names, target, description, env);
}

void parse_options(const DeclareOptions& declare, const std::set<std::string>& wanted,
                   const std::vector<std::string>& tokens) {
    CLI::App app("redlock-run", "redlock-run");
    app.set_help_flag();
    OptionTable table(app, &wanted);
    declare(table);
    std::vector<std::string> reversed(tokens.rbegin(), tokens.rend());  // CLI11 reads back to front
    try {
        app.parse(reversed);
    } catch (const CLI::ParseError& e) {
        throw UsageError(e.what());
    }
}

std::string options_help(const DeclareOptions& declare) {
    CLI::App app("redlock-run", "redlock-run");
    app.set_help_flag();
    OptionTable table(app, nullptr);
    declare(table);
    return app.help();
}

const OptionSpec* find_option(const std::vector<OptionSpec>& catalog, std::string_view name,
                              bool is_long) {
    auto it = std::find_if(catalog.begin(), catalog.end(), [&](const OptionSpec& spec) {
        return (is_long ? spec.long_name : spec.short_name) == name;
    });
    return it == catalog.end() ? nullptr : &*it;
}

void add_options_from_environment(const std::vector<OptionSpec>& catalog,
                                  std::set<std::string>& wanted) {
    for (const OptionSpec& spec : catalog)
        if (!spec.env.empty() && std::getenv(std::string(spec.env).c_str()))
            wanted.insert(spec.key());
}

}  // namespace redlock

#include "cli/option_table.hpp"

#include "cli/cli11.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <type_traits>

#include "util/errors.hpp"
#include "util/excerpt.hpp"
#include "util/iequals.hpp"

namespace redlock {
namespace {

template <class T>
OptionSpec spec_of(std::string_view names, const char* env, T& target) {
    OptionSpec spec;
    spec.target = &target;
    spec.env = env ? env : "";
    spec.takes_value = !std::is_same_v<T, bool>;  // a flag is a bool; every other takes a value
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

bool flag_value(const OptionSpec& spec, std::string_view value) {
    static constexpr std::array<std::string_view, 4> yes = {"1", "true", "yes", "on"};
    static constexpr std::array<std::string_view, 4> no = {"0", "false", "no", "off"};
    auto is = [&](std::string_view word) { return iequals(value, word); };
    if (std::any_of(yes.begin(), yes.end(), is)) return true;
    if (std::any_of(no.begin(), no.end(), is)) return false;
    throw UsageError(
        fmt::format("{} (--{}) must be 1, true, yes, on, 0, false, no or off, not '{}'", spec.env,
                    spec.key(), excerpt(value)));
}

}  // namespace

template <class T>
void OptionTable::add(const char* declared, T& target, const char* description, const char* env) {
    // "-t,--ttl DURATION": the names, then what --help shows for the value.
    std::string_view whole = declared;
    std::string_view placeholder;
    if (auto space = whole.find(' '); space != std::string_view::npos)
        placeholder = whole.substr(space + 1);
    // The spec's names view the declared literal, which outlives the table.
    OptionSpec spec = spec_of(whole.substr(0, whole.find(' ')), env, target);
    spec.placeholder = placeholder;
    spec.description = description;
    spec.group = group_;
    std::string names(whole.substr(0, whole.find(' ')));
    if (catalog_) {
        catalog_->push_back(spec);
        return;
    }
    if (wanted_ && !wanted_->contains(spec.key())) return;
    CLI::Option* opt = nullptr;
    if constexpr (std::is_same_v<T, bool>)
        opt = app_->add_flag(names, target, description);
    else
        opt = app_->add_option(names, target, description)
                  ->type_name(std::string(placeholder.empty() ? "VALUE" : placeholder));
    if (env && !wanted_) opt->envname(env);  // for --help only: apply_environment reads them
    if (!group_.empty()) opt->group(std::string(group_));
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
        // CLI11's words for a repeated option ("--token: At Most 1 required but received 2")
        // read like a bug; say it in ours.
        std::string_view text = e.what();
        constexpr std::string_view repeated = ": At Most 1 required but received ";
        if (auto at = text.find(repeated); at != std::string_view::npos)
            throw UsageError(fmt::format("{} given {} times; give it once", text.substr(0, at),
                                         text.substr(at + repeated.size())));
        throw UsageError(e.what());
    }
}

const OptionSpec* find_option(const std::vector<OptionSpec>& catalog, std::string_view name,
                              bool is_long) {
    auto it = std::find_if(catalog.begin(), catalog.end(), [&](const OptionSpec& spec) {
        return (is_long ? spec.long_name : spec.short_name) == name;
    });
    return it == catalog.end() ? nullptr : &*it;
}

std::map<std::string, std::string> apply_environment(const std::vector<OptionSpec>& catalog,
                                                     const std::set<std::string>& given) {
    std::map<std::string, std::string> applied;
    for (const OptionSpec& spec : catalog) {
        if (spec.env.empty() || given.contains(spec.key())) continue;
        const char* value = std::getenv(std::string(spec.env).c_str());
        if (!value || !*value) continue;
        applied.emplace(spec.key(), spec.env);
        if (auto* flag = std::get_if<bool*>(&spec.target))
            **flag = flag_value(spec, value);
        else if (auto* text = std::get_if<std::string*>(&spec.target))
            **text = value;
        else
            std::get<std::vector<std::string>*>(spec.target)->push_back(value);
    }
    return applied;
}

}  // namespace redlock

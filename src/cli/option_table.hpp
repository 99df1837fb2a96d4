// Every option is declared once, in an add_*_options function, and read two ways: as a plain
// catalog (names, whether a value follows, variable, target) for our own scan of argv and of the
// environment, and as CLI11 options for the parse of the command line. CLI11 2.1.2 checks each
// new option against every earlier one through copied name lists, which cost each run ~150 µs
// for ~40 options, more than a Redis round trip; so only the options given on the command line
// go to CLI11 (none at all when none is given); --help is written from the catalog (usage.cpp).
// The variables are read here, not by CLI11: a run configured through the environment alone, as
// cron jobs often are, then never builds a CLI11 App, whose first option name alone costs ~40 µs
// of locale set-up.
// This is the only file that includes CLI11: every file that does pays for its static validators
// before main.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace CLI {
class App;
}

namespace redlock {

struct OptionSpec {
    std::string_view long_name;   // without "--"; empty if none
    std::string_view short_name;  // without "-"; empty if none
    std::string_view env;         // the variable that sets it; empty if none
    bool takes_value = false;
    // Where the value goes: a flag's bool, an option's string, or a repeatable option's list.
    std::variant<bool*, std::string*, std::vector<std::string>*> target;
    // For --help: what the value is called ("DURATION"), what the option does, its group.
    std::string_view placeholder;
    std::string_view description;
    std::string_view group;  // empty: the options every command takes (-h, -V, ...)

    // How the scan names the option: the long name, else the short one.
    std::string key() const { return std::string(long_name.empty() ? short_name : long_name); }
};

class OptionTable {
  public:
    // Records the declarations into `catalog`; the targets are not touched until
    // apply_environment.
    explicit OptionTable(std::vector<OptionSpec>& catalog) : catalog_(&catalog) {}
    // Adds the declarations to `app`, all of them (for --help, with their variables) or, with
    // `wanted`, those whose key is in it (for the parse, without: see apply_environment).
    OptionTable(CLI::App& app, const std::set<std::string>* wanted) : app_(&app), wanted_(wanted) {}

    // `names` is CLI11's "-t,--ttl" form, then for an option with a value a space and what --help
    // calls the value ("-t,--ttl DURATION"); every pointer must outlive the table (literals do).
    void option(const char* names, std::string& target, const char* description,
                const char* env = nullptr);
    void option(const char* names, std::vector<std::string>& target, const char* description,
                const char* env = nullptr);
    void flag(const char* names, bool& target, const char* description, const char* env = nullptr);
    // Declares, through `declare`, options listed under `name` in --help-all; groups nest (the
    // inner one names its options). `name` must outlive the table (literals do).
    template <class Declare>
    void group(const char* name, Declare declare) {
        std::string_view outer = group_;
        group_ = name;
        declare();
        group_ = outer;
    }

  private:
    template <class T>
    void add(const char* names, T& target, const char* description, const char* env);

    std::vector<OptionSpec>* catalog_ = nullptr;
    CLI::App* app_ = nullptr;
    const std::set<std::string>* wanted_ = nullptr;
    std::string_view group_;
};

using DeclareOptions = std::function<void(OptionTable&)>;

// Parses `tokens` (our options as given, in order) with CLI11, into the targets of the options
// `declare` declares whose key is in `wanted`. -h is an ordinary flag here, not CLI11's exception.
// Throws UsageError.
void parse_options(const DeclareOptions& declare, const std::set<std::string>& wanted,
                   const std::vector<std::string>& tokens);

// The option called `name` (without dashes), or nullptr.
const OptionSpec* find_option(const std::vector<OptionSpec>& catalog, std::string_view name,
                              bool is_long);

// Sets, from its variable, each option not given on the command line (its key is not in `given`):
// the command line wins, and a variable set to "" counts as unset, as in CLI11's own handling.
// A flag's variable must say yes or no (1/true/yes/on, 0/false/no/off, any case); else UsageError.
// Returns which options took their value from the environment: key -> variable.
std::map<std::string, std::string> apply_environment(const std::vector<OptionSpec>& catalog,
                                                     const std::set<std::string>& given);

}  // namespace redlock

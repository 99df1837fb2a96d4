// Dispatch: which action the words ask for (run, a subcommand, --help, --version), then the
// parse into its options. Each group of options is declared and checked in a file of its own:
// common_options, run_options_cli (with job_options_cli), inspect_options_cli, tls_options.
#include "cli/cli.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/common_options.hpp"
#include "cli/inspect_options_cli.hpp"
#include "cli/option_table.hpp"
#include "cli/run_options_cli.hpp"
#include "cli/scan.hpp"
#include "cli/usage.hpp"
#include "lock/node/lock_name.hpp"
#include "util/errors.hpp"
#include "util/excerpt.hpp"

namespace redlock {
namespace {

std::optional<Action> subcommand(std::string_view word) {
    if (word == "status") return Action::status;
    if (word == "list") return Action::list;
    if (word == "release") return Action::release;
    if (word == "history") return Action::history;
    return std::nullopt;
}

// Whether `word` is a subcommand mistyped as people do: its letters swapped, one left out or one
// too many ("stauts", "lsit", "relase", "historyy"); a different letter is a different word
// ("lint" is not "list").
std::optional<std::string_view> misspelt_subcommand(std::string_view word) {
    for (std::string_view sub : {"status", "list", "release", "history"}) {
        std::string a(word), b(sub);
        if (a.size() == b.size() && a != b) {
            std::sort(a.begin(), a.end());
            std::sort(b.begin(), b.end());
            if (a == b) return sub;
            continue;
        }
        const std::string_view& longer = word.size() > sub.size() ? word : sub;
        const std::string_view& shorter = word.size() > sub.size() ? sub : word;
        if (longer.size() != shorter.size() + 1) continue;
        for (std::size_t i = 0; i < longer.size(); ++i)
            if (std::string(longer.substr(0, i)) + std::string(longer.substr(i + 1)) == shorter)
                return sub;
    }
    return std::nullopt;
}

// Whether execvp would find `command`: a path, or a file that PATH names and we may execute.
bool command_found(const std::string& command) {
    if (command.find('/') != std::string::npos) return ::access(command.c_str(), X_OK) == 0;
    const char* path = std::getenv("PATH");
    std::string_view dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
    while (true) {
        std::size_t colon = dirs.find(':');
        std::string dir(dirs.substr(0, colon));
        if (::access(((dir.empty() ? "." : dir) + "/" + command).c_str(), X_OK) == 0) return true;
        if (colon == std::string_view::npos) return false;
        dirs.remove_prefix(colon + 1);
    }
}

void add_all_options(OptionTable& t, RawOptions& raw, InspectRawOptions& inspect_raw) {
    // In the order of --help-all: the run's options, then the connection's, then the subcommands'.
    add_run_options(t, raw);
    add_common_options(t, raw);
    add_inspect_options(t, inspect_raw);
}

}  // namespace

Invocation parse_command_line(const std::vector<std::string>& args) {
    RawOptions raw;
    InspectRawOptions inspect_raw;
    DeclareOptions declare = [&](OptionTable& t) { add_all_options(t, raw, inspect_raw); };
    std::vector<OptionSpec> catalog;
    OptionTable table(catalog);
    declare(table);

    Scan scan;
    scan.next = 1;  // args[0] is the program name
    scan_options(catalog, args, scan);
    // A subcommand word counts only where NAME would be: "redlock-run NAME status" runs `status`.
    std::optional<Action> sub;
    std::string sub_word;
    std::vector<std::string> operands;
    if (!scan.double_dash && scan.next < args.size()) sub = subcommand(args[scan.next]);
    if (sub) {
        sub_word = args[scan.next++];
        operands = scan_operands(catalog, args, scan);
    } else if (!scan.double_dash && scan.next < args.size() && args[scan.next] == "run") {
        ++scan.next;
        scan_options(catalog, args, scan);
    }
    // "NAME -q -- COMMAND": before an explicit "--", the words after NAME are options too (the
    // lock NAME is where people often put the line's first word, as in `consul lock`). Without
    // a "--", a word there that looks like an option would be run as the command: refused below.
    std::optional<std::size_t> command_at;  // where COMMAND starts, after NAME's options
    if (!sub && !scan.double_dash && scan.next + 1 < args.size()) {
        std::size_t first = scan.next + 1;
        const std::string& w = args[first];
        bool flock_form = w == "-c" || w == "--shell" || w.starts_with("--shell=");
        if (w.size() > 1 && w[0] == '-' && w != "--" && !flock_form &&
            std::find(args.begin() + static_cast<long>(first), args.end(), "--") != args.end()) {
            Scan after;
            after.next = first;
            scan_options(catalog, args, after);
            if (!after.double_dash)
                throw UsageError(fmt::format(
                    "only options may come between the lock NAME '{}' and '--'; '{}' is not one",
                    excerpt(args[scan.next]), excerpt(args[after.next])));
            for (const std::string& key : after.given)
                if (scan.given.contains(key))
                    throw UsageError(fmt::format("option '--{}' given twice", key));
            scan.options.insert(scan.options.end(), after.options.begin(), after.options.end());
            scan.given.insert(after.given.begin(), after.given.end());
            command_at = after.next;
        }
    }
    if (!scan.options.empty()) parse_options(declare, scan.given, scan.options);
    scan.from_env = apply_environment(catalog, scan.given);

    Invocation inv;
    if (raw.help || raw.help_all) {
        // "status --help" is the subcommand's own; --help-all lists every option wherever it is.
        inv.action = Action::help;
        inv.text = raw.help_all ? help_all_text(catalog)
                   : sub        ? subcommand_help_text(sub_word, catalog)
                                : help_text(catalog);
        return inv;
    }
    if (raw.version) {
        inv.action = Action::version;
        inv.text = fmt::format("redlock-run {}\n", version());
        return inv;
    }
    if (sub) {
        inv.action = *sub;
        inv.inspect = inspect_options(*sub, sub_word, raw, inspect_raw, scan, std::move(operands));
        return inv;
    }
    if (scan.given.contains("limit"))
        throw UsageError("option '--limit' is for history, not for running a command");
    if (scan.given.contains("last-runs"))
        throw UsageError("option '--last-runs' is for list, not for running a command");
    if (scan.given.contains("names"))
        throw UsageError("option '--names' is for list, not for running a command");
    for (const char* option : {"json", "token", "force"})
        if (scan.given.contains(option))
            throw UsageError(fmt::format("option '--{}' is for {}, not for running a command",
                                         option, option[0] == 'j' ? "status and list" : "release"));

    if (scan.next >= args.size()) throw UsageError("missing the lock NAME (see --help)");
    std::string name = args[scan.next];
    // `redlock-run help`, as git and systemctl take it.
    if (name == "help" && scan.next + 1 == args.size()) {
        inv.action = Action::help;
        inv.text = help_text(catalog);
        return inv;
    }
    check_lock_name(name, raw.prefix, scan.label("prefix"));
    std::vector<std::string> rest(
        args.begin() + static_cast<long>(command_at.value_or(scan.next + 1)), args.end());
    if (!command_at && !rest.empty() && rest[0].size() > 1 && rest[0][0] == '-' &&
        rest[0] != "--" && rest[0] != "-c" && rest[0] != "--shell" &&
        !rest[0].starts_with("--shell="))
        throw UsageError(fmt::format(
            "'{}' after the lock NAME '{}' would be run as the command; put options before NAME, "
            "or end them with '--' (redlock-run {} OPTIONS -- COMMAND)",
            excerpt(rest[0]), excerpt(name), excerpt(name)));
    // "redlock-run stauts job": a mistyped subcommand, taken for a lock NAME, would take the
    // lock and fail to run `job`. Only when the command cannot be found: a lock may well be
    // named "stats", for a command that exists.
    if (!command_at && !rest.empty() && rest[0] != "--" && rest[0] != "-c" &&
        rest[0] != "--shell" && !rest[0].starts_with("--shell=") && !command_found(rest[0]))
        if (std::optional<std::string_view> meant = misspelt_subcommand(name))
            throw UsageError(fmt::format(
                "'{}' is not a subcommand (did you mean '{}'?) and '{}' is not a command in PATH; "
                "to run a command under a lock named '{}', write: redlock-run {} -- COMMAND",
                excerpt(name), *meant, excerpt(rest[0]), excerpt(name), excerpt(name)));

    // flock's order, "NAME -c CMD", is accepted too: nothing else after NAME can be an option.
    if (!rest.empty() &&
        (rest[0] == "-c" || rest[0] == "--shell" || rest[0].starts_with("--shell="))) {
        if (!raw.shell.empty()) throw UsageError("--shell given twice");
        if (rest[0].starts_with("--shell=")) {
            raw.shell = rest[0].substr(8);
            rest.erase(rest.begin());
        } else {
            if (rest.size() < 2)
                throw UsageError(fmt::format("option '{}' needs a value", rest[0]));
            raw.shell = rest[1];
            rest.erase(rest.begin(), rest.begin() + 2);
        }
        scan.given.insert("shell");
    }
    if (!rest.empty() && rest[0] == "--") rest.erase(rest.begin());

    std::vector<std::string> command;
    if (scan.given.contains("shell")) {
        if (raw.shell.empty()) throw UsageError("--shell needs a non-empty command");
        if (!rest.empty())
            throw UsageError("give either --shell 'CMD' or COMMAND [ARGS...], not both");
        command = {"/bin/sh", "-c", raw.shell};
    } else {
        if (rest.empty()) {
            // "--wait job true": the option took the NAME as its value.
            std::string hint;
            if (std::optional<std::string_view> meant = misspelt_subcommand(name))
                hint = fmt::format(" (did you mean the subcommand '{}'?)", *meant);
            else if (scan.options.size() >= 2 && scan.next >= 2 &&
                     scan.options.back() == args[scan.next - 1] &&
                     args[scan.next - 2].starts_with("-") && args[scan.next - 2] != "--")
                hint = fmt::format(" (did '{}' take '{}' as its value?)",
                                   excerpt(args[scan.next - 2]), excerpt(args[scan.next - 1]));
            throw UsageError(
                fmt::format("missing the COMMAND to run under lock '{}'{}", name, hint));
        }
        command = std::move(rest);
    }
    inv.run = run_options(raw, scan, std::move(name), std::move(command));
    return inv;
}

}  // namespace redlock

// Dispatch: which action the words ask for (run, a subcommand, --help, --version), then the
// parse into its options. Each group of options is declared and checked in a file of its own:
// common_options, run_options_cli (with job_options_cli), inspect_options_cli, tls_options.
#include "cli/cli.hpp"

#include <fmt/format.h>

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
#include "lock/lock_name.hpp"
#include "util/errors.hpp"

namespace redlock {
namespace {

std::optional<Action> subcommand(std::string_view word) {
    if (word == "status") return Action::status;
    if (word == "list") return Action::list;
    if (word == "release") return Action::release;
    if (word == "history") return Action::history;
    return std::nullopt;
}

void add_all_options(OptionTable& t, RawOptions& raw, InspectRawOptions& inspect_raw) {
    add_common_options(t, raw);
    add_run_options(t, raw);
    add_inspect_options(t, inspect_raw);
}

std::string full_help_text() {
    RawOptions raw;
    InspectRawOptions inspect_raw;
    return help_text(options_help([&](OptionTable& t) { add_all_options(t, raw, inspect_raw); }));
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
    if (!scan.options.empty()) parse_options(declare, scan.given, scan.options);
    apply_environment(catalog, scan.given);

    Invocation inv;
    if (raw.help) {
        inv.action = Action::help;
        inv.text = full_help_text();
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
    check_lock_name(name, raw.prefix);
    std::vector<std::string> rest(args.begin() + static_cast<long>(scan.next) + 1, args.end());

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
        if (rest.empty())
            throw UsageError(fmt::format("missing the COMMAND to run under lock '{}'", name));
        command = std::move(rest);
    }
    inv.run = run_options(raw, scan, std::move(name), std::move(command));
    return inv;
}

}  // namespace redlock

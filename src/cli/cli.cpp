#include "cli/cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <set>

#include "cli/common_options.hpp"
#include "cli/inspect_options_cli.hpp"
#include "cli/job_options_cli.hpp"
#include "cli/option_table.hpp"
#include "cli/run_options_cli.hpp"
#include "cli/scan.hpp"
#include "cli/tls_options.hpp"
#include "cli/version.hpp"
#include "lock/lock_name.hpp"
#include "lock/permits.hpp"
#include "lock/shared.hpp"
#include "redis/secrets.hpp"
#include "redis/url_list.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/excerpt.hpp"
#include "util/log.hpp"

namespace redlock {
namespace {

constexpr const char* usage_text =
    "Usage: redlock-run [OPTIONS] NAME [--] COMMAND [ARGS...]\n"
    "       redlock-run [OPTIONS] -c 'SHELL COMMAND' NAME\n"
    "       redlock-run run [OPTIONS] NAME [--] COMMAND [ARGS...]\n"
    "       redlock-run status [OPTIONS] [--json] NAME\n"
    "       redlock-run list [OPTIONS] [--json] [--last-runs] [PATTERN]\n"
    "       redlock-run list [OPTIONS] --names [PATTERN]\n"
    "       redlock-run release [OPTIONS] (--token TOKEN | --force) NAME\n"
    "       redlock-run history [OPTIONS] [--limit N] [--json] NAME\n"
    "\n"
    "Runs COMMAND while holding the Redis lock NAME, so that only one instance runs at a time\n"
    "across hosts. Exits with COMMAND's status; see the man page for every exit code.\n"
    "DURATION: a number and a unit (ms, s, m, h, d), combinable: 250ms, 1.5s, 5m, 1h30m; a bare\n"
    "number is seconds (0.5 is 500ms).\n";

constexpr const char* exit_codes_text =
    "Exit codes: COMMAND's own status (128+N if killed by signal N); 75 lock busy (-E);\n"
    "64 usage; 65 key is not a lock; 69 Redis unreachable (or too few replicas for\n"
    "--min-replicas, or acquired too late to run safely); 70 internal; 76 lock lost;\n"
    "77 auth refused; 78 TLS verification failed; 79 stuck (--heartbeat-timeout,\n"
    "--max-renewals); 124 --max-runtime exceeded;\n"
    "126 command not executable; 127 command not found.\n"
    "status: 0 held, 1 free; release --token: 1 when another token holds the lock.";

std::string help_text(const std::string& generated) {
    // CLI11 opens with its own usage line; ours names NAME and COMMAND.
    auto options = generated.find("Options:");
    return fmt::format("{}\n{}\n{}\n", usage_text,
                       options == std::string::npos ? generated : generated.substr(options),
                       exit_codes_text);
}

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

#include "cli/cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <set>

#include "cli/common_options.hpp"
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

// The operator commands' own options. Every scan knows them, so "--json status" and "status
// --json" both work and one given to the wrong command gets a clear message.
struct InspectRawOptions {
    bool json = false;
    std::string token;
    bool force = false;
    std::string limit;
    bool last_runs = false;
    bool names = false;
};

void add_inspect_options(OptionTable& t, InspectRawOptions& o) {
    t.group("Operator command options", [&] {
        t.flag("--json", o.json, "status, list, history: print JSON (fields in the man page)");
        t.flag("--names", o.names,
               "list: print only the names of the locks ever taken (held or not), one a line, "
               "at most 1000 (for scripts and the shell completions)");
        t.option("--limit N", o.limit, "history: show the N newest runs (default 20)");
        t.flag("--last-runs", o.last_runs,
               "list: add each lock's last run and last success from its ledger");
        t.option("--token TOKEN", o.token,
                 "release: release only if TOKEN is the lock's current token");
        t.flag("--force", o.force, "release: delete the lock whoever holds it");
    });
}

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

InspectOptions inspect_options(Action action, const std::string& word, const RawOptions& raw,
                               const InspectRawOptions& ir, const Scan& scan,
                               std::vector<std::string> operands) {
    // Run options (--ttl, --wait, ...) would be silently ignored here; refuse them instead.
    RawOptions unused;
    InspectRawOptions unused_inspect;
    std::vector<OptionSpec> accepted;
    OptionTable table(accepted);
    add_common_options(table, unused);
    add_inspect_options(table, unused_inspect);
    for (const std::string& name : scan.given)
        if (!find_option(accepted, name, name.size() > 1))
            throw UsageError(
                fmt::format("option '--{}' is for running a command, not for '{}'", name, word));
    auto only_for = [&](const char* option, const char* commands) {
        if (scan.given.contains(option))
            throw UsageError(
                fmt::format("option '--{}' is only for {}, not for '{}'", option, commands, word));
    };

    InspectOptions o;
    o.conn = connection_options(raw, scan);
    o.json = ir.json;
    if (action != Action::history) only_for("limit", "history");
    if (action != Action::list) only_for("last-runs", "list");
    o.last_runs = ir.last_runs;
    if (action != Action::list) only_for("names", "list");
    if (action == Action::list) {
        if (ir.json && ir.names) throw UsageError("give 'list' either --json or --names, not both");
        o.names = ir.names;
        only_for("token", "release");
        only_for("force", "release");
        if (operands.size() > 1)
            throw UsageError(
                fmt::format("'list' takes at most one PATTERN, got {}", operands.size()));
        if (!operands.empty()) o.pattern = operands[0];
        if (o.pattern.empty()) throw UsageError("the list PATTERN must not be empty");
        return o;
    }
    if (operands.empty()) throw UsageError(fmt::format("'{}' needs the lock NAME", word));
    if (operands.size() > 1)
        throw UsageError(fmt::format("'{}' takes one lock NAME, got {}", word, operands.size()));
    o.name = operands[0];
    if (o.name.empty()) throw UsageError("the lock NAME must not be empty");
    if (action == Action::history && scan.given.contains("limit"))
        o.limit = static_cast<std::size_t>(
            int_option(ir.limit, "--limit", 1, static_cast<int>(ledger_size_max)));
    if (action == Action::status || action == Action::history) {
        only_for("token", "release");
        only_for("force", "release");
        return o;
    }
    only_for("json", "status, list and history");
    bool token = scan.given.contains("token");
    if (token == ir.force)
        throw UsageError(token ? "give either --token or --force to 'release', not both"
                               : "'release' needs --token T (release only if T is the current "
                                 "token) or --force (delete the lock whoever holds it)");
    if (token) {
        if (ir.token.empty()) throw UsageError("--token needs a non-empty token");
        o.token = ir.token;
    }
    o.force = ir.force;
    return o;
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

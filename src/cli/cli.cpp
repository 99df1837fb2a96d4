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

// The run's own option values, as given, beside the common ones; validated into RunOptions.
struct RawOptions : CommonRawOptions {
    std::string ttl = "30s";
    std::string renew_every;
    std::string wait;
    std::string conflict_exit_code = "75";
    std::string shell;
    std::string on_lost = "term";
    std::string kill_after = "10s";
    std::string min_hold;
    std::string max_runtime;
    bool syslog = false;
    bool hold_info = false;
    std::string min_replicas = "0";
    std::string replica_timeout = "100ms";
    bool keep_env = false;
    std::string permits = "1";
    bool shared = false;
    bool quiet = false;
    JobRawOptions job;
};

void add_run_options(OptionTable& t, RawOptions& o) {
    t.option("-t,--ttl DURATION", o.ttl,
             "Lock time-to-live, renewed while COMMAND runs (default 30s)", "REDLOCK_TTL");
    t.option("--renew-every DURATION", o.renew_every,
             "Renew the lock every DURATION (default ttl/3)", "REDLOCK_RENEW_EVERY");
    t.option("-w,--wait DURATION", o.wait,
             "Wait up to DURATION for a busy lock, or 'forever' (default: do not wait)",
             "REDLOCK_WAIT");
    t.option("-E,--conflict-exit-code N", o.conflict_exit_code,
             "Exit with N when the lock is busy (default 75)", "REDLOCK_CONFLICT_EXIT_CODE");
    t.flag("-q,--quiet", o.quiet, "Say nothing when the lock is busy", "REDLOCK_QUIET");
    t.option("-c,--shell CMD", o.shell, "Run CMD with /bin/sh -c instead of COMMAND ARGS");
    t.option("--on-lost ACTION", o.on_lost,
             "When the lock is lost: term (SIGTERM, then SIGKILL after --kill-after), "
             "kill (SIGKILL at once) or ignore (only report); default term",
             "REDLOCK_ON_LOST");
    t.option("--kill-after DURATION", o.kill_after,
             "Send SIGKILL DURATION after SIGTERM on a lost lock or --max-runtime "
             "(default 10s)",
             "REDLOCK_KILL_AFTER");
    t.option("--min-hold DURATION", o.min_hold,
             "Keep the lock until DURATION after it was taken even if COMMAND ends sooner, so a "
             "late cron on another host skips (Redis's clock enforces it)",
             "REDLOCK_MIN_HOLD");
    t.option("--max-runtime DURATION", o.max_runtime,
             "SIGTERM COMMAND's process group after DURATION (SIGKILL after --kill-after), "
             "release, exit 124",
             "REDLOCK_MAX_RUNTIME");
    t.flag("--syslog", o.syslog, "Send the messages to syslog too (facility user, tag redlock-run)",
           "REDLOCK_SYSLOG");
    t.flag("--hold-info", o.hold_info,
           "Record the command line beside the lock too (host, pid, user and start time "
           "always are), for busy messages and status",
           "REDLOCK_HOLD_INFO");
    t.option("--min-replicas N", o.min_replicas,
             "After the acquire and each renewal, WAIT until N replicas have it; too few: "
             "release and exit 69 (default 0: no WAIT)",
             "REDLOCK_MIN_REPLICAS");
    t.option("--replica-timeout DURATION", o.replica_timeout,
             "How long each WAIT for --min-replicas may take (default 100ms)",
             "REDLOCK_REPLICA_TIMEOUT");
    t.option("--permits N", o.permits,
             "Let up to N runs hold NAME at once (default 1: a plain lock); each gets its "
             "own permit REDLOCK_PERMIT (1..N) and fence; not with a quorum",
             "REDLOCK_PERMITS");
    t.flag("--shared", o.shared,
           "Hold NAME shared: any number of --shared runs together, none beside an exclusive "
           "run (one without --shared), which waiting shared runs let go first; not with "
           "--permits or a quorum",
           "REDLOCK_SHARED");
    t.flag("--keep-env", o.keep_env,
           "Pass REDLOCK_URL, REDISCLI_AUTH, REDLOCK_PASSWORD and REDLOCK_PASSWORD_FILE on "
           "to COMMAND (removed by default: they may carry the password)",
           "REDLOCK_KEEP_ENV");
    add_job_options(t, o.job);
}

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

// --min-replicas and --replica-timeout. Every renewal WAITs too, so a WAIT that times out must
// leave time for another renewal before the lease ends.
ReplicaPolicy replica_policy(const RawOptions& raw, const Scan& scan, const RunOptions& r) {
    ReplicaPolicy p;
    // 100 is far beyond any real replica set; more is a typo, not a deployment.
    p.min_replicas = int_option(raw.min_replicas, "--min-replicas", 0, 100);
    p.timeout = duration_option(raw.replica_timeout, "--replica-timeout");
    if (!p.enabled()) {
        if (scan.given.contains("replica-timeout"))
            throw UsageError("--replica-timeout needs --min-replicas N with N above 0");
        return p;
    }
    Millis room = (r.ttl - r.renew_every) / 4;
    if (p.timeout > room)
        throw UsageError(fmt::format(
            "--replica-timeout ({}) must be at most a quarter of --ttl minus --renew-every ({}) "
            "so that a renewal whose WAIT times out can be retried before the lock expires",
            format_duration(p.timeout), format_duration(room)));
    return p;
}

RunOptions run_options(const RawOptions& raw, const Scan& scan, std::string name,
                       std::vector<std::string> command) {
    RunOptions r;
    r.conn = connection_options(raw, scan);
    r.name = std::move(name);
    r.ttl = duration_option(raw.ttl, "--ttl");
    // An option given with an empty value ("--wait ''", a variable expanding to nothing) is a
    // mistake to report, not the option left out.
    auto given = [&](const std::string& value, const char* option) {
        return !value.empty() || scan.given.contains(option);
    };
    r.renew_every = given(raw.renew_every, "renew-every")
                        ? duration_option(raw.renew_every, "--renew-every")
                        : std::max(Millis(1), r.ttl / 3);
    // At most half: a renewal that fails must have time for retries before the lease ends,
    // or the first hiccup loses the lock.
    if (r.renew_every > r.ttl / 2)
        throw UsageError(fmt::format(
            "--renew-every ({}) must be at most half of --ttl ({}) so that a failed renewal can "
            "be retried before the lock expires",
            format_duration(r.renew_every), format_duration(r.ttl)));
    if (r.ttl < Millis(100))
        throw UsageError(fmt::format("--ttl {} is too short to renew safely; use at least 100ms",
                                     format_duration(r.ttl)));
    // Redlock counts every attempt's time against the ttl: a node timeout near the ttl would
    // let one slow node eat the whole validity.
    if (!r.conn.quorum.empty() && r.conn.node_timeout * 10 > r.ttl)
        throw UsageError(fmt::format(
            "--node-timeout ({}) must be at most a tenth of --ttl ({}) in the quorum mode, so "
            "that a slow node leaves most of the lock's validity",
            format_duration(r.conn.node_timeout), format_duration(r.ttl)));
    // "--wait 0" means a single try, as flock -w 0 does; other durations must be positive.
    if (raw.wait == "0" || raw.wait == "0s" || raw.wait == "0ms")
        r.wait.reset();
    else if (raw.wait == "forever")
        r.wait = Millis::max();
    else if (given(raw.wait, "wait"))
        r.wait = duration_option(raw.wait, "--wait");
    r.conflict_exit_code = int_option(raw.conflict_exit_code, "--conflict-exit-code", 0, 255);
    r.quiet = raw.quiet;
    if (raw.on_lost == "term")
        r.on_lost = OnLost::term;
    else if (raw.on_lost == "kill")
        r.on_lost = OnLost::kill;
    else if (raw.on_lost == "ignore")
        r.on_lost = OnLost::ignore;
    else
        throw UsageError(
            fmt::format("invalid value '{}' for --on-lost: expected term, kill or ignore",
                        excerpt(raw.on_lost)));
    r.kill_after = duration_option(raw.kill_after, "--kill-after");
    if (given(raw.min_hold, "min-hold")) r.min_hold = duration_option(raw.min_hold, "--min-hold");
    if (given(raw.max_runtime, "max-runtime"))
        r.max_runtime = duration_option(raw.max_runtime, "--max-runtime");
    r.syslog = raw.syslog;
    r.hold_info = raw.hold_info;
    r.replicas = replica_policy(raw, scan, r);
    r.keep_env = raw.keep_env;
    r.permits = int_option(raw.permits, "--permits", 1, max_permits);
    if (r.permits > 1 && !r.conn.quorum.empty()) throw UsageError(permits_quorum_refusal);
    r.shared = raw.shared;
    if (r.shared && r.permits > 1) throw UsageError(shared_permits_refusal);
    if (r.shared && !r.conn.quorum.empty()) throw UsageError(shared_quorum_refusal);
    r.job = job_options(raw.job, scan.given);
    // The acquire script reads the slot; permits.lua does not, and with several holders at once
    // two runs of one slot could run side by side anyway.
    if (r.permits > 1 && r.job.once_per)
        throw UsageError(
            "--once-per needs --permits 1: with several holders at once two runs of a slot could "
            "run side by side");
    r.command = std::move(command);
    return r;
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

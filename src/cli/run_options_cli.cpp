#include "cli/run_options_cli.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "lock/node/permits.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/excerpt.hpp"

namespace redlock {
namespace {

void add_lock_options(OptionTable& t, RawOptions& o);

}  // namespace

void add_run_options(OptionTable& t, RawOptions& o) {
    t.group("Run options", [&] { add_lock_options(t, o); });
    t.group("Scheduled job options", [&] { add_job_options(t, o.job); });
}

namespace {

void add_lock_options(OptionTable& t, RawOptions& o) {
    t.option("-t,--ttl DURATION", o.ttl,
             "Lock time-to-live, renewed while COMMAND runs (default 30s)", "REDLOCK_TTL");
    t.option("--renew-every DURATION", o.renew_every,
             "Renew the lock every DURATION (default ttl/3)", "REDLOCK_RENEW_EVERY");
    t.option("-w,--wait DURATION", o.wait,
             "Wait up to DURATION for a busy lock, or 'forever' (default: do not wait)",
             "REDLOCK_WAIT");
    // flock's spelling of the default, for those who type it by habit.
    t.flag("-n,--no-wait", o.no_wait,
           "Do not wait for a busy lock: exit with the conflict code at once (the default; "
           "flock's -n); wins over REDLOCK_WAIT");
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
    t.option("--restart-guard DURATION", o.restart_guard,
             "After Redis lost a lock's data (a restart without persistence), hold the lock "
             "back until the server is DURATION old: a holder from before may still run "
             "(default: the --ttl; 0: off)",
             "REDLOCK_RESTART_GUARD");
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
             "own permit REDLOCK_PERMIT (1..N) and fence",
             "REDLOCK_PERMITS");
    t.flag("-s,--shared", o.shared,
           "Hold NAME shared: any number of --shared runs together, none beside an exclusive "
           "run (one without --shared), which waiting shared runs let go first; not with "
           "--permits",
           "REDLOCK_SHARED");
    t.flag("--keep-env", o.keep_env,
           "Pass REDLOCK_URL, REDISCLI_AUTH, REDLOCK_PASSWORD and REDLOCK_PASSWORD_FILE on "
           "to COMMAND (removed by default: they may carry the password)",
           "REDLOCK_KEEP_ENV");
}

// --min-replicas and --replica-timeout. Every renewal WAITs too, so a WAIT that times out must
// leave time for another renewal before the lease ends.
ReplicaPolicy replica_policy(const RawOptions& raw, const Scan& scan, const RunOptions& r) {
    ReplicaPolicy p;
    // 100 is far beyond any real replica set; more is a typo, not a deployment.
    p.min_replicas = int_option(raw.min_replicas, scan.label("min-replicas"), 0, 100);
    p.timeout = duration_option(raw.replica_timeout, scan.label("replica-timeout"));
    if (!p.enabled()) {
        if (scan.given.contains("replica-timeout"))
            throw UsageError("--replica-timeout needs --min-replicas N with N above 0");
        return p;
    }
    Millis room = (r.ttl - r.renew_every) / 4;
    if (p.timeout > room)
        throw UsageError(fmt::format(
            "{} ({}) must be at most a quarter of {} minus {} ({}) so that a renewal whose WAIT "
            "times out can be retried before the lock expires",
            scan.label("replica-timeout"), format_duration(p.timeout), scan.label("ttl"),
            scan.label("renew-every"), format_duration(room)));
    return p;
}

}  // namespace

RunOptions run_options(const RawOptions& raw, const Scan& scan, std::string name,
                       std::vector<std::string> command) {
    RunOptions r;
    r.conn = connection_options(raw, scan);
    r.name = std::move(name);
    r.ttl = duration_option(raw.ttl, scan.label("ttl"));
    // An option given with an empty value ("--wait ''", a variable expanding to nothing) is a
    // mistake to report, not the option left out.
    auto given = [&](const std::string& value, const char* option) {
        return !value.empty() || scan.given.contains(option);
    };
    r.renew_every = given(raw.renew_every, "renew-every")
                        ? duration_option(raw.renew_every, scan.label("renew-every"))
                        : std::max(Millis(1), r.ttl / 3);
    // At most half: a renewal that fails must have time for retries before the lease ends,
    // or the first hiccup loses the lock.
    if (r.renew_every > r.ttl / 2)
        throw UsageError(fmt::format(
            "{} ({}) must be at most half of {} ({}) so that a failed renewal can be retried "
            "before the lock expires",
            scan.label("renew-every"), format_duration(r.renew_every), scan.label("ttl"),
            format_duration(r.ttl)));
    if (r.ttl < Millis(100))
        throw UsageError(fmt::format("{} {} is too short to renew safely; use at least 100ms",
                                     scan.label("ttl"), format_duration(r.ttl)));
    // Redlock counts every attempt's time against the ttl: a node timeout near the ttl would
    // let one slow node eat the whole validity.
    if (!r.conn.quorum.empty() && r.conn.node_timeout * 10 > r.ttl)
        throw UsageError(fmt::format(
            "{} ({}) must be at most a tenth of {} ({}) in the quorum mode, so that a slow node "
            "leaves most of the lock's validity",
            scan.label("node-timeout"), format_duration(r.conn.node_timeout), scan.label("ttl"),
            format_duration(r.ttl)));
    if (raw.no_wait && scan.given.contains("wait"))
        throw UsageError("give either --wait or --no-wait, not both");
    // "--wait 0" means a single try, as flock -w 0 does; other durations must be positive.
    // --no-wait says the same, over a REDLOCK_WAIT from the environment.
    if (raw.no_wait || raw.wait == "0" || raw.wait == "0s" || raw.wait == "0ms")
        r.wait.reset();
    else if (raw.wait == "forever")
        r.wait = Millis::max();
    else if (given(raw.wait, "wait"))
        r.wait = duration_option(raw.wait, scan.label("wait"));
    r.conflict_exit_code =
        int_option(raw.conflict_exit_code, scan.label("conflict-exit-code"), 0, 255);
    r.quiet = raw.quiet;
    if (raw.on_lost == "term")
        r.on_lost = OnLost::term;
    else if (raw.on_lost == "kill")
        r.on_lost = OnLost::kill;
    else if (raw.on_lost == "ignore")
        r.on_lost = OnLost::ignore;
    else
        throw UsageError(fmt::format("invalid value '{}' for {}: expected term, kill or ignore",
                                     excerpt(raw.on_lost), scan.label("on-lost")));
    r.kill_after = duration_option(raw.kill_after, scan.label("kill-after"));
    if (given(raw.min_hold, "min-hold"))
        r.min_hold = duration_option(raw.min_hold, scan.label("min-hold"));
    // "0" turns the guard off (every duration_option value is positive).
    if (raw.restart_guard == "0" || raw.restart_guard == "0s" || raw.restart_guard == "0ms")
        r.restart_guard = Millis(0);
    else if (given(raw.restart_guard, "restart-guard"))
        r.restart_guard = duration_option(raw.restart_guard, scan.label("restart-guard"));
    if (given(raw.max_runtime, "max-runtime"))
        r.max_runtime = duration_option(raw.max_runtime, scan.label("max-runtime"));
    r.syslog = raw.syslog;
    r.hold_info = raw.hold_info;
    r.replicas = replica_policy(raw, scan, r);
    r.keep_env = raw.keep_env;
    r.permits = int_option(raw.permits, scan.label("permits"), 1, max_permits);
    r.shared = raw.shared;
    if (r.shared && r.permits > 1)
        // shared_permits_refusal's words (lock/node/shared.hpp), each option named where it is set.
        throw UsageError(
            fmt::format("{} does not combine with {} above 1: a name is either a permits lock or a "
                        "shared/exclusive lock; give one of them",
                        scan.label("shared"), scan.label("permits")));
    r.job = job_options(raw.job, scan);
    // The acquire script reads the slot; permits.lua does not, and with several holders at once
    // two runs of one slot could run side by side anyway.
    if (r.permits > 1 && r.job.once_per)
        throw UsageError(fmt::format(
            "{} needs {} 1: with several holders at once two runs of a slot could run side by "
            "side",
            scan.label("once-per"), scan.label("permits")));
    // shared.lua reads no slot either, and shared holders run side by side by design, so two runs
    // of one slot would too: refused rather than silently run every time.
    if (r.shared && r.job.once_per)
        throw UsageError(fmt::format(
            "{} does not combine with {}: shared holders run side by side, so two runs of a "
            "slot could too",
            scan.label("once-per"), scan.label("shared")));
    r.command = std::move(command);
    return r;
}

}  // namespace redlock

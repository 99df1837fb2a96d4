#include "cli/job_options_cli.hpp"

#include <fmt/format.h>

#include <optional>

#include "run/metrics.hpp"
#include "run/ping.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/excerpt.hpp"
#include "util/number.hpp"
#include "util/regular_file.hpp"

namespace redlock {
namespace {

long long count_option(const std::string& text, const std::string& option, long long min,
                       long long max) {
    std::optional<long long> v = parse_integer(text, min, max);
    if (!v)
        throw UsageError(fmt::format("invalid value '{}' for {}: expected {}-{}", excerpt(text),
                                     option, min, max));
    return *v;
}

}  // namespace

void add_job_options(OptionTable& t, JobRawOptions& o) {
    t.option("--once-per DURATION", o.once_per,
             "Run COMMAND at most once per PERIOD slot of Redis's clock: after a run of the "
             "slot succeeded, later runs of NAME skip with the busy exit code; not with --shared "
             "or --permits above 1",
             "REDLOCK_ONCE_PER");
    t.option("--slot-offset DURATION", o.slot_offset,
             "With --once-per: slots start D after each multiple of PERIOD since the epoch "
             "(UTC; default 0)",
             "REDLOCK_SLOT_OFFSET");
    t.flag("--once-per-any-result", o.once_per_any_result,
           "With --once-per: a failed run (non-zero exit, lost lock, timeout) uses up its slot "
           "too",
           "REDLOCK_ONCE_PER_ANY_RESULT");
    t.option("--ledger-size N", o.ledger_size,
             "Keep the last N runs of NAME in Redis for `history` and `status` (default 100, "
             "0: no ledger)",
             "REDLOCK_LEDGER_SIZE");
    t.flag("--ledger-busy", o.ledger_busy, "Record busy and skipped runs in the ledger too",
           "REDLOCK_LEDGER_BUSY");
    t.option("--metrics-file FILE", o.metrics_file,
             "After each run, update FILE in Prometheus text format (node_exporter's textfile "
             "collector)",
             "REDLOCK_METRICS_FILE");
    t.option("--ping URL", o.ping,
             "Dead-man pings (Healthchecks.io): URL/start when COMMAND starts, URL on exit 0, "
             "URL/<exit status> otherwise; only the run that holds the lock pings",
             "REDLOCK_PING");
    t.option("--ping-timeout DURATION", o.ping_timeout,
             "With --ping: the most each ping may take, retries included (default 10s)",
             "REDLOCK_PING_TIMEOUT");
    t.option("--heartbeat-file FILE", o.heartbeat_file,
             "With --heartbeat-timeout: COMMAND proves progress by touching FILE (passed in "
             "REDLOCK_HEARTBEAT_FILE)");
    t.option("--heartbeat-timeout DURATION", o.heartbeat_timeout,
             "Stop COMMAND as stuck (exit 79) when --heartbeat-file was not touched for D");
    t.option("--max-renewals N", o.max_renewals,
             "Stop COMMAND as stuck (exit 79) when the lock would be renewed more than N times");
}

JobOptions job_options(const JobRawOptions& o, const Scan& scan) {
    JobOptions j;
    auto has = [&](const std::string& value, const char* option) {
        return !value.empty() || scan.given.contains(option);
    };
    if (has(o.once_per, "once-per")) {
        OncePer p;
        p.period = parse_duration(o.once_per, scan.label("once-per"));
        if (p.period < once_period_min || p.period > once_period_max)
            throw UsageError(fmt::format("{} {} is out of range: 1s to 366d",
                                         scan.label("once-per"), format_duration(p.period)));
        if (has(o.slot_offset, "slot-offset") && o.slot_offset != "0") {
            p.offset = parse_duration(o.slot_offset, scan.label("slot-offset"));
            if (p.offset >= p.period)
                throw UsageError(fmt::format("{} ({}) must be less than {} ({})",
                                             scan.label("slot-offset"), format_duration(p.offset),
                                             scan.label("once-per"), format_duration(p.period)));
        }
        p.any_result = o.once_per_any_result;
        j.once_per = p;
    } else if (scan.given.contains("slot-offset") || scan.given.contains("once-per-any-result")) {
        throw UsageError("--slot-offset and --once-per-any-result need --once-per");
    }
    if (has(o.ledger_size, "ledger-size"))
        j.ledger_size = static_cast<std::size_t>(count_option(
            o.ledger_size, scan.label("ledger-size"), 0, static_cast<long long>(ledger_size_max)));
    j.ledger_busy = o.ledger_busy;
    if (has(o.metrics_file, "metrics-file")) {
        if (o.metrics_file.empty()) throw UsageError("--metrics-file needs a path");
        // Here, before the lock is taken and the command runs, not only when writing after it.
        check_metrics_path(o.metrics_file, scan.label("metrics-file"));
        j.metrics_file = o.metrics_file;
    }
    if (has(o.ping, "ping")) {
        // Here, before the lock is taken: a URL that could never be pinged is found out now,
        // not by a warning after the job ran.
        check_ping_url(o.ping, scan.label("ping"));
        j.ping_url = o.ping;
        if (has(o.ping_timeout, "ping-timeout")) {
            j.ping_timeout = parse_duration(o.ping_timeout, scan.label("ping-timeout"));
            if (j.ping_timeout < ping_timeout_min || j.ping_timeout > ping_timeout_max)
                throw UsageError(
                    fmt::format("{} {} is out of range: {} to {}", scan.label("ping-timeout"),
                                format_duration(j.ping_timeout), format_duration(ping_timeout_min),
                                format_duration(ping_timeout_max)));
        }
    } else if (scan.given.contains("ping-timeout")) {
        throw UsageError("--ping-timeout needs --ping");
    }
    bool file = has(o.heartbeat_file, "heartbeat-file");
    bool timeout = has(o.heartbeat_timeout, "heartbeat-timeout");
    if (file != timeout) throw UsageError("--heartbeat-file and --heartbeat-timeout go together");
    if (file) {
        if (o.heartbeat_file.empty()) throw UsageError("--heartbeat-file needs a path");
        // The command touches it (as this user): a place it cannot be is found out now, not by
        // stopping the command as stuck when its timeout has passed.
        require_writable_directory(o.heartbeat_file, "--heartbeat-file");
        j.heartbeat_file = o.heartbeat_file;
        j.heartbeat_timeout = parse_duration(o.heartbeat_timeout, scan.label("heartbeat-timeout"));
    }
    // A million renewals is years at any sensible --renew-every.
    if (has(o.max_renewals, "max-renewals"))
        j.max_renewals = count_option(o.max_renewals, "--max-renewals", 0, 1'000'000);
    return j;
}

}  // namespace redlock

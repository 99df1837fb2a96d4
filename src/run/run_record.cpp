#include "run/run_record.hpp"

#include <sys/wait.h>

#include <fmt/format.h>

#include <ctime>

#include "lock/node/holder.hpp"
#include "run/metrics.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"
#include "util/printable.hpp"

namespace redlock {
namespace {

std::string time_text(long long unix_ms) {
    std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
    std::tm tm{};
    char buf[64] = "?";
    if (localtime_r(&t, &tm)) std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %Z", &tm);
    return buf;
}

double seconds(std::chrono::system_clock::time_point t) {
    return std::chrono::duration<double>(t.time_since_epoch()).count();
}

}  // namespace

std::string slot_done_message(const LockKeys& keys, const OncePer& policy, long long slot,
                              const SlotRecord& done) {
    if (done.restart_s)
        return fmt::format(
            "lock '{}': this slot (every {}, since {}) may already have run: Redis restarted {}, "
            "after the slot began, without this lock's data (--restart-guard); not running "
            "the command",
            keys.key, format_duration(policy.period), time_text(slot_start_ms(slot, policy)),
            restarted_ago(*done.restart_s));
    // Host and outcome come from Redis as any bytes: escaped, they cannot forge lines.
    return fmt::format(
        "lock '{}': this slot (every {}, since {}) was already done on {} (pid {}, fence {}{}), "
        "finished {}; not running the command",
        keys.key, format_duration(policy.period), time_text(slot_start_ms(slot, policy)),
        done.host.empty() ? std::string("an unknown host") : printable(done.host), done.pid,
        done.fence,
        done.outcome == "ran" && done.exit_status == 0
            ? std::string()
            : fmt::format(", {}, exit {}", printable(done.outcome),
                          done.exit_status ? std::to_string(*done.exit_status) : "-"),
        time_text(done.end_ms));
}

std::optional<RunRecord> run_record(const RunOptions& options, const FinishedRun& run) {
    const JobOptions& job = options.job;
    bool slot = run.slot && job.once_per;
    if (job.ledger_size == 0 && !slot) return std::nullopt;
    // Busy and skipped runs are many (a cron every minute): recorded only with --ledger-busy.
    bool quiet_outcome = run.outcome == Outcome::busy || run.outcome == Outcome::skipped_slot;
    if (quiet_outcome && !job.ledger_busy) return std::nullopt;
    RunRecord rec;
    // Host, pid and user only; the command line only where --hold-info already shows it.
    HolderInfo me = this_process_info(options.command);
    rec.entry.host = me.host;
    rec.entry.pid = me.pid;
    rec.entry.user = me.user;
    if (options.hold_info) rec.entry.command = me.command;
    rec.entry.duration_ms = run.duration.count();
    rec.entry.fence = run.fence;
    if (run.wait_status) {
        if (WIFEXITED(*run.wait_status)) rec.entry.exit_status = WEXITSTATUS(*run.wait_status);
        if (WIFSIGNALED(*run.wait_status)) rec.entry.signal = WTERMSIG(*run.wait_status);
    }
    rec.outcome = run.outcome;
    rec.held = run.held;
    rec.ledger_size = job.ledger_size;
    // A busy or skipped run never ran this slot's job: it must not mark the slot done.
    if (slot && !quiet_outcome) {
        // A run that exited non-zero leaves the slot open unless --once-per-any-result; one that
        // ran and exited 0 marks it only if it still holds the lock (the script checks).
        bool ok = run.outcome == Outcome::ran && rec.entry.exit_status == 0;
        if (job.once_per->any_result || ok) {
            rec.slot = run.slot;
            rec.slot_start_ms = slot_start_ms(*run.slot, *job.once_per);
            rec.any_result = job.once_per->any_result;
            rec.once_ttl = once_record_ttl(*job.once_per);
        }
    }
    // Without a ledger a record only marks the slot: a run that does not mark it sends none.
    if (job.ledger_size == 0 && !rec.slot) return std::nullopt;
    return rec;
}

void record_in_ledger(LockBackend& lock, const RunRecord& record) {
    try {
        RecordResult r = lock.record_run(std::string(), record);
        if (!r.problem.empty())
            log::warning("could not record the run of lock '{}' in its ledger: {}", lock.keys().key,
                         printable(r.problem));
    } catch (const std::exception& e) {
        log::warning("could not record the run of lock '{}' in its ledger: {}", lock.keys().key,
                     e.what());
    }
}

void warn_unless_consequence(bool consequence, const std::string& message) {
    if (consequence)
        log::verbose("{}", message);
    else
        log::warning("{}", message);
}

bool check_recorded(const LockKeys& keys, const RunRecord& record, const Release& release,
                    bool after_loss) {
    if (!release.recorded) {
        warn_unless_consequence(
            after_loss, fmt::format("could not record the run of lock '{}' in its ledger: {}",
                                    keys.key, release.record_error));
        return true;
    }
    const RecordResult& r = *release.recorded;
    // A ledger the script could not write (a key of another type) is a problem of its own,
    // whatever happened to the lock.
    if (!r.problem.empty())
        log::warning("could not record the run of lock '{}' in its ledger: {}", keys.key,
                     printable(r.problem));
    if (record.slot && !r.slot_written && (record.any_result || r.still_held))
        warn_unless_consequence(
            after_loss,
            fmt::format("lock '{}': could not mark slot {} done; a later run of it will run too",
                        keys.key, *record.slot));
    return r.still_held || !record.held;
}

void record_start_in_metrics(const RunOptions& options,
                             std::chrono::system_clock::time_point started) {
    if (options.job.metrics_file.empty()) return;
    MetricsUpdate u;
    u.lock = options.name;
    u.started = true;
    u.start_s = seconds(started);
    try {
        update_metrics_file(options.job.metrics_file, u);
    } catch (const std::exception& e) {
        log::warning("could not update the metrics file '{}': {}", options.job.metrics_file,
                     e.what());
    }
}

void record_in_metrics(const RunOptions& options, const FinishedRun& run) {
    if (options.job.metrics_file.empty()) return;
    MetricsUpdate u;
    u.lock = options.name;
    u.outcome = std::string(outcome_name(run.outcome));
    // A command that could not be started (127, 126, a process limit) is a run that held the
    // lock and failed: its exit status is the alert's to see.
    u.ran = run.held;
    u.start_s = seconds(run.started);
    u.end_s = seconds(run.ended);
    u.duration_s = std::chrono::duration<double>(run.ended - run.started).count();
    u.exit_status = run.exit_code;
    u.success = run.outcome == Outcome::ran && run.exit_code == 0;
    try {
        update_metrics_file(options.job.metrics_file, u);
    } catch (const std::exception& e) {
        log::warning("could not update the metrics file '{}': {}", options.job.metrics_file,
                     e.what());
    }
}

}  // namespace redlock

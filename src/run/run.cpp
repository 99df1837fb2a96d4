#include "run/run.hpp"

#include <poll.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>

#include "lock/backend.hpp"
#include "lock/node/holder.hpp"
#include "lock/node/token.hpp"
#include "redis/secrets.hpp"
#include "run/child.hpp"
#include "run/handover.hpp"
#include "run/heartbeat.hpp"
#include "run/ping.hpp"
#include "run/reentry.hpp"
#include "run/renewer.hpp"
#include "run/run_record.hpp"
#include "run/wait_line.hpp"
#include "run/watchdog.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"
#include "util/signals.hpp"

namespace redlock {
namespace {

std::string last_failure_text(const Renewer& renewer) {
    std::string why = renewer.last_failure();
    return why.empty() ? why : fmt::format(" (last renewal error: {})", why);
}

class Run {
  public:
    Run(const RunOptions& o, LockBackend& lock, Clock& clock, Pinger* pinger)
        : opt_(o), lock_(lock), clock_(clock), keys_(lock.keys()), token_(new_token()) {
        if (pinger && !o.job.ping_url.empty())
            pings_.emplace(*pinger, o.job.ping_url, keys_.name, o.job.ping_timeout);
        // Host, pid, user and start time always go with the acquire (same script, no extra
        // round trip), so that a busy message names the holder; the command line may carry
        // secrets and is recorded only with --hold-info.
        info_ = this_process_info(o.hold_info ? o.command : std::vector<std::string>{});
        // A run that records its end marks its holder record, so that a death without a trace
        // (with its watchdog) is recorded as abandoned instead (lock/scripts/lib/abandoned.lua).
        info_->ledger_size = o.job.ledger_size;
    }

    int execute();

  private:
    Millis since(Deadline start) const {
        return std::chrono::duration_cast<Millis>(clock_.now() - start);
    }
    bool acquire();
    void refuse_if_too_late(const Renewer& renewer);
    void start(Renewer& renewer, const Child::Env& env, std::optional<Watchdog>& watchdog,
               std::optional<Child>& child);
    int supervise(Child& child, Renewer& renewer);
    void start_renewer(Renewer& renewer, Deadline now);
    // `kill_by`: the latest moment the command may still run (the lease end), if there is one.
    void lose(Child& child, Renewer& renewer, const std::string& reason,
              std::optional<Deadline> kill_by = std::nullopt);
    Millis term_lead(const Renewer& renewer) const;
    Millis watchdog_lead() const { return std::min(Millis(50), opt_.ttl / 20); }
    void release(Millis keep = Millis(0));
    // What a release said, for the log (and lost_).
    void released(const Release& r, Millis keep, Deadline start);
    Millis min_hold_left() const;
    // The end of a run that held the lock: the ledger entry and the release in one round trip
    // (LockBackend::finish); the metrics file follows in report(). run/run_record.hpp.
    void finish(Outcome outcome, std::optional<int> wait_status, Millis keep);
    // A run that did not take the lock (busy, skipped): the ledger entry alone.
    void record(Outcome outcome);
    void fill_finished(Outcome outcome, std::optional<int> wait_status);
    int report(int exit_code);
    // --ping: the end ping of a run that held the lock, once its status is known.
    int ping_end(int exit_code) {
        if (pings_) pings_->end(exit_code);
        return exit_code;
    }

    const RunOptions& opt_;
    SignalEvents signals_;  // first: every thread created later inherits the blocked mask
    LockBackend& lock_;
    Clock& clock_;  // every deadline below, and the supervisor's wait
    const LockKeys& keys_;
    std::string token_;
    long long fence_ = 0;
    int permit_ = 1;  // which of the --permits this run holds
    Deadline lease_start_{};
    Millis lease_{0};  // the first lease's length when not the TTL: a hand-off's claim window
    bool lost_ = false;
    std::optional<Deadline> kill_at_;
    Deadline renewal_start_{};        // when supervise() (next) tries to start the renewal thread
    std::optional<HolderInfo> info_;  // recorded beside the lock (command: --hold-info)
    Deadline acquired_at_{};          // when the acquire reply arrived (for --min-hold)
    std::optional<Deadline> runtime_end_;  // --max-runtime: when to stop the command
    bool timed_out_ = false;               // --max-runtime stopped the command
    std::optional<int> interrupted_by_;    // a signal ended --wait before the lock was taken
    bool skipped_ = false;                 // --once-per: the slot's run is already done
    std::optional<StuckDetector> stuck_detector_;  // --heartbeat-timeout, --max-renewals
    bool stuck_ = false;                           // they stopped the command
    FinishedRun finished_;                         // what record() and report() write
    std::optional<Pings> pings_;                   // --ping (for the run that holds the lock)
    std::jthread metrics_start_;  // writes the start to --metrics-file; last: joined first
};

bool Run::acquire() {
    std::optional<Acquisition> taken;
    {
        // Erased (when shown) before anything below speaks of the outcome.
        WaitLine line(lock_, opt_.wait && !opt_.quiet);
        taken = lock_.acquire(token_, opt_.ttl, info_ ? &*info_ : nullptr,
                              opt_.wait.value_or(Millis(0)), signals_);
    }
    Acquisition& a = *taken;
    if (a.interrupted_by) {
        interrupted_by_ = a.interrupted_by;
        log::info("stopped waiting for lock '{}' on signal {}", keys_.key, *a.interrupted_by);
        return false;
    }
    finished_.slot = a.slot;
    if (a.slot_done) {
        skipped_ = true;
        if (!opt_.quiet)
            log::info("{}", slot_done_message(keys_, *opt_.job.once_per, a.slot.value_or(0),
                                              *a.slot_done));
        return false;
    }
    if (!a.acquired) {
        if (!opt_.quiet)
            log::info("{}{}", a.busy,
                      opt_.wait
                          ? fmt::format("; gave up after waiting {}", format_duration(*opt_.wait))
                          : std::string("; not running the command"));
        return false;
    }
    lease_start_ = a.lease_start;
    lease_ = a.lease;
    acquired_at_ = clock_.now();
    fence_ = a.fence;
    permit_ = a.permit;
    log::verbose("acquired lock '{}' {} (fence {}{}) in {}", keys_.key, a.where, fence_,
                 opt_.permits > 1 ? fmt::format(", permit {} of {}", permit_, opt_.permits)
                 : opt_.shared    ? std::string(", shared")
                                  : std::string(),
                 format_duration(since(lease_start_)));
    return true;
}

void Run::lose(Child& child, Renewer& renewer, const std::string& reason,
               std::optional<Deadline> kill_by) {
    if (lost_) return;
    lost_ = true;
    Deadline now = clock_.now();
    switch (opt_.on_lost) {
        case OnLost::term: {
            Deadline kill_at = now + opt_.kill_after;
            if (kill_by) kill_at = std::min(kill_at, *kill_by);
            if (kill_at <= now) {
                // Noticed only after the lease end (redlock-run was stopped or starved, the host
                // slept): the lock may be someone else's already, no time is left for SIGTERM.
                log::error(
                    "lock '{}' lost: {}; the lease has already ended, sending SIGKILL to the "
                    "command",
                    keys_.key, reason);
                child.signal(SIGKILL);
                break;
            }
            log::error("lock '{}' lost: {}; sending SIGTERM to the command (SIGKILL in {})",
                       keys_.key, reason,
                       format_duration(std::chrono::ceil<Millis>(kill_at - now)));
            child.signal(SIGTERM);
            child.signal(SIGCONT);  // a stopped command must wake up to die
            kill_at_ = kill_at_ ? std::min(*kill_at_, kill_at) : kill_at;
            break;
        }
        case OnLost::kill:
            log::error("lock '{}' lost: {}; sending SIGKILL to the command", keys_.key, reason);
            child.signal(SIGKILL);
            break;
        case OnLost::ignore:
            log::error("lock '{}' lost: {}; the command keeps running (--on-lost ignore)",
                       keys_.key, reason);
            break;
    }
    // Never extend a lock we have declared lost. Stopped after the signal, not before: joining
    // may wait for a renewal in flight, and the command must not wait for that.
    renewer.stop();
}

// How long before the lease ends --on-lost term starts stopping the command, so that the SIGKILL
// at the end of --kill-after lands no later than the lease end: after that Redis may already have
// handed the lock to someone else. Capped at half the slack between a due renewal and the lease
// end, so a long --kill-after cannot turn one slow renewal into a lost lock.
Millis Run::term_lead(const Renewer& renewer) const {
    if (opt_.on_lost != OnLost::term) return Millis(0);
    // A lock handed over for a claim window, not yet renewed (the renewer renews it at once): a
    // lead of the TTL's scale would stop the command before that renewal could answer.
    if (lease_ > Millis(0) && !renewer.renewed()) return std::min(opt_.kill_after, lease_ / 4);
    return std::min(opt_.kill_after, (opt_.ttl - opt_.renew_every) / 2);
}

// The renewal thread, when the first renewal is due. The system may refuse it (EAGAIN at a
// process limit reached since the command started): then the lease is not extended, and
// supervise() stops the command before the lease ends as when renewals fail, trying again
// meanwhile, since a thread may be given later.
void Run::start_renewer(Renewer& renewer, Deadline now) {
    try {
        renewer.start();
    } catch (const std::system_error& e) {
        if (renewal_start_ == renewer.first_renewal())
            log::error(
                "cannot start the renewal thread for lock '{}': {}; trying again until "
                "the lease ends",
                keys_.key, e.code().message());
        renewal_start_ = now + std::max(Millis(10), opt_.renew_every / 10);
    }
}

int Run::supervise(Child& child, Renewer& renewer) {
    renewal_start_ = renewer.first_renewal();
    while (!child.try_reap()) {
        Deadline now = clock_.now();
        if (!lost_ && !renewer.started() && now >= renewal_start_) start_renewer(renewer, now);
        // The watchdog kills the group at valid_until(); the supervisor finishes a little
        // earlier, so that the watchdog acts only when the supervisor could not (was stopped or
        // starved), not in a tie with a supervisor that is on time.
        Deadline lease_end = renewer.valid_until() - watchdog_lead();
        if (!lost_ && now >= lease_end - term_lead(renewer))
            lose(child, renewer,
                 fmt::format(
                     "no renewal succeeded in time and the lease {}, after which "
                     "Redis may give the lock to someone else{}",
                     lease_end > now
                         ? "ends in " + format_duration(std::chrono::ceil<Millis>(lease_end - now))
                         : "ended " + format_duration(std::chrono::floor<Millis>(now - lease_end)) +
                               " ago",
                     last_failure_text(renewer)),
                 lease_end);
        if (kill_at_ && now >= *kill_at_) {
            log::error(
                "the command under lock '{}' is still running after SIGTERM; sending "
                "SIGKILL",
                keys_.key);
            child.signal(SIGKILL);
            kill_at_.reset();
        }
        if (stuck_detector_ && !stuck_ && now >= stuck_detector_->due()) {
            if (std::string why = stuck_detector_->stuck(now); !why.empty()) {
                stuck_ = true;
                log::error(
                    "the command under lock '{}' is stuck: {}; sending SIGTERM (SIGKILL "
                    "after {})",
                    keys_.key, why, format_duration(opt_.kill_after));
                child.signal(SIGTERM);
                child.signal(SIGCONT);
                if (!kill_at_) kill_at_ = now + opt_.kill_after;
            }
        }
        if (runtime_end_ && now >= *runtime_end_) {
            runtime_end_.reset();
            timed_out_ = true;
            log::error(
                "the command under lock '{}' ran longer than --max-runtime {}; sending "
                "SIGTERM (SIGKILL after {})",
                keys_.key, format_duration(*opt_.max_runtime), format_duration(opt_.kill_after));
            child.signal(SIGTERM);
            child.signal(SIGCONT);  // a stopped command must wake up to die
            if (!kill_at_) kill_at_ = now + opt_.kill_after;
        }

        Deadline wake = Deadline::max();
        if (!lost_) wake = renewer.valid_until() - watchdog_lead() - term_lead(renewer);
        if (!lost_ && !renewer.started()) wake = std::min(wake, renewal_start_);
        if (kill_at_) wake = std::min(wake, *kill_at_);
        if (runtime_end_) wake = std::min(wake, *runtime_end_);
        if (stuck_detector_ && !stuck_) wake = std::min(wake, stuck_detector_->due());
        pollfd fds[2] = {{signals_.fd(), POLLIN, 0}, {renewer.event_fd(), POLLIN, 0}};
        int n = clock_.poll(fds, lost_ ? 1 : 2, wake);
        if (n <= 0) continue;
        if (!lost_ && (fds[1].revents & POLLIN)) lose(child, renewer, renewer.lost_reason());
        if (fds[0].revents & POLLIN) {
            while (auto sig = signals_.next()) {
                if (*sig == SIGCHLD) continue;  // reaped at the top of the loop
                log::verbose("forwarding signal {} to the command", *sig);
                child.signal(*sig);
            }
        }
    }
    // Reaped only after the lease end, which the loop above did not see coming (redlock-run was
    // stopped or starved, and the watchdog may have killed the command): nothing proves that the
    // command ended while the lock was ours.
    if (!lost_ && clock_.now() >= renewer.valid_until()) {
        lost_ = true;
        log::error(
            "lock '{}' lost: the lease ended before redlock-run saw the command end (was "
            "redlock-run stopped?); the command may have run without the lock",
            keys_.key);
    }
    return exit_status_of(child.wait_status());
}

// The supervisor stops the command at valid_until() - watchdog_lead() - term_lead() unless a
// renewal moves that point. When the acquire itself was so slow that this point has already
// passed, the command would be started only to be stopped at once (and told the lock was lost
// although no renewal was even due). Not starting it at all is the honest outcome, and safe to
// retry. Only a point already passed counts: a slow acquire on a loaded host that leaves some of
// the lease is the renewer's to extend, as with any run.
void Run::refuse_if_too_late(const Renewer& renewer) {
    Deadline now = clock_.now();
    Millis took = std::chrono::ceil<Millis>(now - lease_start_);
    Deadline stop_at = renewer.valid_until() - watchdog_lead() - term_lead(renewer);
    if (now < stop_at) return;
    // Not release(): a lock found gone there means "the command ran without it", which is false
    // here, since the command never started. The lock simply expired before we could use it.
    Release r = lock_.release(token_, Millis(0));
    std::string what = "released the lock without running the command";
    if (r.outcome == Release::Outcome::lost)
        what = "did not run the command (the lock had already expired or passed to another holder)";
    else if (r.outcome == Release::Outcome::unknown)
        what = fmt::format(
            "did not run the command (could not release the lock: {}; it expires by itself "
            "within {})",
            r.detail, format_duration(opt_.ttl));
    throw RedisUnavailable(fmt::format(
        "lock '{}' acquired too late: the acquire took {} of the {} ttl, past the point where the "
        "command would have to be stopped; {}",
        keys_.key, format_duration(took), format_duration(opt_.ttl), what));
}

// Starts the watchdog, then the command under it. The watchdog's first deadline is the lease end
// the renewer starts from, and every renewal moves it (set_on_extended), so it kills the group at
// the same lease end as supervise() does, and does so only when supervise() could not act.
void Run::start(Renewer& renewer, const Child::Env& env, std::optional<Watchdog>& watchdog,
                std::optional<Child>& child) {
    try {
        refuse_if_too_late(renewer);
    } catch (const Error& e) {
        ping_end(e.code());  // the lock was ours and the job did not run: a failure to report
        throw;
    }
    try {
        // --on-lost ignore lets the command outlive the lease by choice: the watchdog then acts
        // only when redlock-run dies.
        bool enforce = opt_.on_lost != OnLost::ignore;
        // Should redlock-run die, the watchdog hands over to a process that records the run and
        // releases the lock (run/handover.hpp); the file is the watchdog's once it started.
        Fd handover = handover_file(token_, fence_, finished_.slot, acquired_at_,
                                    std::chrono::system_clock::now());
        watchdog.emplace(keys_.key, enforce ? renewer.valid_until() : Deadline::max(),
                         Watchdog::Start::exec_or_fork, handover.get());
        if (enforce) renewer.set_on_extended([&w = *watchdog](Deadline d) { w.extend(d); });
        child.emplace(Child::spawn(opt_.command, env, signals_.original_mask(), &*watchdog));
    } catch (const SpawnError& e) {
        finish(Outcome::failed_to_start, std::nullopt, Millis(0));
        ping_end(report(e.code()));
        throw;
    } catch (const Error& e) {
        release();
        ping_end(e.code());
        throw;
    }
    // After the spawn, from a thread: the command never waits for the network.
    if (pings_) pings_->start();
    log::verbose("started '{}' as pid {} (watchdog pid {})", opt_.command.front(), child->pid(),
                 watchdog->pid());
    if (opt_.max_runtime) runtime_end_ = clock_.now() + *opt_.max_runtime;
    finished_.started = std::chrono::system_clock::now();
    // On a thread of its own: the write may wait up to 5s for another writer's lock, and the
    // supervisor (renewals, signals, the lease end) must not wait with it.
    if (!opt_.job.metrics_file.empty())
        metrics_start_ = std::jthread(
            [this, started = finished_.started] { record_start_in_metrics(opt_, started); });
    const JobOptions& job = opt_.job;
    if (job.heartbeat_timeout || job.max_renewals)
        // (From the wake-up's arrival for a lock a release handed over: its lease_start is a
        // bound from before, up to half the claim window earlier than the command's start.)
        stuck_detector_.emplace(job.heartbeat_file, job.heartbeat_timeout, job.max_renewals,
                                opt_.renew_every, lease_ > Millis(0) ? acquired_at_ : lease_start_);
}

// What --min-hold still asks for. Counted from when the acquire reply arrived, which is no
// earlier than when Redis set the key, so the remainder errs long: Redis, which applies it, never
// ends the hold before min-hold has passed since the key was set.
Millis Run::min_hold_left() const {
    if (!opt_.min_hold) return Millis(0);
    return std::max(Millis(0), *opt_.min_hold - since(acquired_at_));
}

void Run::release(Millis keep) {
    Deadline start = clock_.now();
    released(lock_.release(token_, keep), keep, start);
}

void Run::released(const Release& r, Millis keep, Deadline start) {
    switch (r.outcome) {
        case Release::Outcome::released:
            if (keep > Millis(0))
                log::verbose("kept lock '{}' for another {} (--min-hold {}) in {}", keys_.key,
                             format_duration(keep), format_duration(*opt_.min_hold),
                             format_duration(since(start)));
            else
                log::verbose("released lock '{}' in {}", keys_.key, format_duration(since(start)));
            break;
        case Release::Outcome::lost:
            if (!lost_) log::error("lock '{}' {}", keys_.key, r.detail);
            lost_ = true;
            break;
        case Release::Outcome::unknown:
            // After a reported loss, a consequence of it (see finish): -v only.
            warn_unless_consequence(
                lost_,
                fmt::format("could not release lock '{}' ({}); it expires by itself within {}",
                            keys_.key, r.detail, format_duration(opt_.ttl)));
            break;
    }
}

void Run::fill_finished(Outcome outcome, std::optional<int> wait_status) {
    finished_.outcome = outcome;
    finished_.held = fence_ != 0;
    finished_.fence = fence_;
    finished_.wait_status = wait_status;
    finished_.duration = fence_ != 0 ? since(acquired_at_) : Millis(0);
    finished_.ended = std::chrono::system_clock::now();
}

void Run::record(Outcome outcome) {
    fill_finished(outcome, std::nullopt);
    if (std::optional<RunRecord> rec = run_record(opt_, finished_)) record_in_ledger(lock_, *rec);
}

void Run::finish(Outcome outcome, std::optional<int> wait_status, Millis keep) {
    fill_finished(outcome, wait_status);
    std::optional<RunRecord> rec = run_record(opt_, finished_);
    if (!rec) return release(keep);
    Deadline start = clock_.now();
    Release r = lock_.finish(token_, keep, *rec);
    // After a loss that was reported, what the record and the release then fail at follows from
    // it (Redis gone, the lock no longer ours): -v shows it, the loss alone is the news.
    if (!r.recorded && r.outcome == Release::Outcome::unknown) {
        // The step failed as a whole, for one reason (Redis unreachable): one line for both.
        std::string what = fmt::format(
            "could not release lock '{}' nor record its run in the ledger ({}); it expires by "
            "itself within {}",
            keys_.key, r.detail, format_duration(opt_.ttl));
        warn_unless_consequence(lost_, what);
        return;
    }
    if (!check_recorded(keys_, *rec, r, lost_) && outcome == Outcome::ran)
        finished_.outcome = Outcome::lost;  // the release says so too
    released(r, keep, start);
}

int Run::report(int exit_code) {
    if (metrics_start_.joinable()) metrics_start_.join();  // the start is written before the end
    if (lost_ && finished_.wait_status) finished_.outcome = Outcome::lost;
    finished_.exit_code = exit_code;
    record_in_metrics(opt_, finished_);
    return exit_code;
}

int Run::execute() {
    finished_.started = std::chrono::system_clock::now();
    // --once-per: the acquire itself reads the slot and skips a slot already done.
    lock_.set_once_per(opt_.job.once_per);
    // The holder's info in a busy reply serves only the busy message and the wait line: a quiet
    // run that does not wait shows neither (the cron fleet's `-E 0 -q`), and its busy attempts
    // then cost Redis half as much. The ledger's busy entries (--ledger-busy) record this run,
    // not the holder, and the exit code is the same.
    lock_.set_busy_holder(!opt_.quiet || opt_.wait.has_value());
    lock_.set_restart_guard(opt_.restart_guard);
    if (!acquire()) {
        if (interrupted_by_) return exit_code::signal_base + *interrupted_by_;
        record(skipped_ ? Outcome::skipped_slot : Outcome::busy);
        return report(opt_.conflict_exit_code);
    }

    Child::Env env{{"REDLOCK_NAME", keys_.name},
                   {"REDLOCK_KEY", keys_.key},
                   {"REDLOCK_TOKEN", token_},
                   {"REDLOCK_FENCE", std::to_string(fence_)},
                   {"REDLOCK_PERMIT", std::to_string(permit_)},  // 1..--permits
                   {"REDLOCK_TTL_MS", std::to_string(opt_.ttl.count())},
                   // lets a nested redlock-run for the same lock see that we hold it (reentry.hpp)
                   {"REDLOCK_REDIS", lock_.identity()}};
    if (finished_.slot) env.emplace_back("REDLOCK_SLOT", std::to_string(*finished_.slot));
    if (!opt_.job.heartbeat_file.empty())
        env.emplace_back("REDLOCK_HEARTBEAT_FILE", opt_.job.heartbeat_file);
    // Outside the block below: the watchdog outlives the renewer (which extends it from its
    // thread) and the Child (which dismisses it before reaping).
    std::optional<Watchdog> watchdog;
    std::optional<Child> child;
    int status;
    {
        Renewer renewer(lock_, keys_, token_, opt_.ttl, opt_.renew_every, lease_start_, clock_,
                        lease_);
        start(renewer, env, watchdog, child);
        status = supervise(*child, renewer);  // starts the renewer when its first renewal is due
    }  // the renewer is stopped and joined before release: it must never outlive the lock
    // The record and the release in one step: a waiter that takes the lock next sees this slot
    // done.
    finish(lost_        ? Outcome::lost
           : stuck_     ? Outcome::stuck
           : timed_out_ ? Outcome::timed_out
                        : Outcome::ran,
           child->wait_status(), min_hold_left());
    // A lost lock outranks --max-runtime: it says the command may have overlapped another
    // holder, which is what the caller most needs to know.
    // The end ping after the release: a host waiting for the lock does not wait for the network.
    if (lost_) return ping_end(report(exit_code::lock_lost));
    if (stuck_) return ping_end(report(exit_code::stuck));
    return ping_end(report(timed_out_ ? exit_code::max_runtime : status));
}

}  // namespace

int run_command(const RunOptions& options) {
    log::set_verbose(options.conn.verbose);
    log::set_syslog(options.syslog);
    // Before the command can inherit the environment, by either path below.
    if (!options.keep_env) scrub_secret_environment();
    std::unique_ptr<LockBackend> lock =
        make_backend(LockKeys::make(options.name, options.conn.prefix), options.conn,
                     options.replicas, options.permits, options.shared);
    // Before Run blocks signals: the command inherits the mask. REDLOCK_REDIS names the whole
    // quorum, so a single-node parent's lock on one of its nodes never passes for a quorum hold.
    exec_if_held_by_ancestor(*lock, options.command);
    // Loaded here, before the lock is taken, and only with --ping: a missing libcurl is a clear
    // error (69) rather than a run whose pings silently never leave.
    std::unique_ptr<Pinger> pinger;
    if (!options.job.ping_url.empty()) pinger = curl_pinger();
    return run_command(options, *lock, boot_clock(), pinger.get());
}

int run_command(const RunOptions& options, LockBackend& lock, Clock& clock, Pinger* pinger) {
    Run run(options, lock, clock, pinger);
    return run.execute();
}

}  // namespace redlock

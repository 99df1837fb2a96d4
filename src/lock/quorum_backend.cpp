// The Redlock quorum as a lock backend: N independent masters (several -u), the lock held while
// a majority holds it. Every operation goes to all nodes at once (QuorumLock).
//
// Waiting: every node queues the waiters in one order (by ticket) and a release wakes the head;
// QuorumLock::acquire (quorum.cpp) makes the argument that this keeps order and cannot deadlock.
#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
#include <vector>

#include "lock/acquisition.hpp"
#include "lock/backend.hpp"
#include "lock/busy_text.hpp"
#include "lock/node/holder.hpp"
#include "lock/quorum/quorum.hpp"
#include "lock/quorum/quorum_math.hpp"
#include "lock/waiter.hpp"
#include "util/backoff.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {
namespace {

// Throws when too few nodes answered to decide anything: the lock is not known to be busy.
[[noreturn]] void throw_unreachable(const LockKeys& keys, const QuorumAttempt& a) {
    std::string first = a.first_error ? a.first_error->message : std::string("no reply");
    int code = a.first_error ? a.first_error->code : exit_code::unavailable;
    // A usage or auth problem on a node says more than "unavailable"; a plain internal error
    // (an unexpected reply) does not.
    if (code == exit_code::internal) code = exit_code::unavailable;
    throw Error(fmt::format("cannot take lock '{}': only {} of {} Redis nodes answered ({} "
                            "needed for a majority); first error: {}",
                            keys.key, a.answered, a.nodes, majority(a.nodes), first),
                code);
}

// "lock 'k' is held elsewhere: 1 of 5 nodes accepted it (5 answered, 3 needed), held by ..."
// for an attempt that reached a majority but did not get the lock.
// With --permits N: "all 3 permits of lock 'k' are held or promised to waiting runs: ...".
// With --shared: "lock 'k' is held by an exclusive holder, or an exclusive run waits ...".
std::string busy_message_alone(const LockKeys& keys, const QuorumAttempt& a, int permits,
                               bool shared) {
    if (!a.why.empty())
        return fmt::format("lock '{}' not taken: {} of {} nodes accepted it ({} answered) but {}",
                           keys.key, a.accepted, a.nodes, a.answered, a.why);
    return busy_text(keys, permits, shared, a.busy, NodeTally{a.accepted, a.nodes, a.answered});
}

// ... and what the nodes that the restart guard held back said (one of them, for all).
std::string busy_message(const LockKeys& keys, const QuorumAttempt& a, int permits, bool shared) {
    std::string plain = busy_message_alone(keys, a, permits, shared);
    if (a.held_back == 0) return plain;
    const AcquireResult& r = *a.held_back_longest;
    return fmt::format(
        "{}; held back on {} node{}: {}", plain, a.held_back, a.held_back == 1 ? "" : "s",
        r.restart_uptime_s
            ? restart_guard_text(r, "")
            : fmt::format("Redis restarted {} without this lock's data, after the --once-per "
                          "slot began: it cannot vote for the slot's run (--restart-guard)",
                          restarted_ago(r.slot_done ? r.slot_done->restart_s.value_or(0) : 0)));
}

struct QuorumWaitResult {
    QuorumAttempt last;
    std::optional<int> interrupted_by;  // a signal ended the wait before the lock was taken
};

// The waiter's place in every node's queue: when it began waiting, in microseconds of this
// host's clock, which is what orders waiters on different hosts (QuorumLock::acquire). Taken
// once per wait, so that a waiter keeps its place however often it looks again.
long long wait_ticket() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// How many attempts a run that does not wait makes when its permits split.
constexpr int split_attempts = 4;

// Tries until acquired or `wait` has passed (zero: a single try; Millis::max(): no bound).
// A waiter queues on every node and blocks until a majority wakes it (a release) or its holder's
// key expires, as a single node's waiter does (waiter.hpp). When the last attempt reached fewer
// than a majority, throws the error it saw (RedisUnavailable unless every node failed in a more
// specific way) with how many nodes answered.
QuorumWaitResult quorum_acquire_waiting(QuorumLock& lock, const LockKeys& keys,
                                        const std::string& token, Millis ttl,
                                        const HolderInfo* info, Millis wait, SignalEvents& signals,
                                        const WaitProgressFn& progress, bool plain) {
    Deadline start = BootClock::now();
    Deadline give_up = wait == Millis::max() ? Deadline::max() : start + wait;
    const bool waiting = wait > Millis(0);
    const long long ticket = waiting ? wait_ticket() : 0;
    // Between attempts that reached too few nodes to decide anything (an outage).
    Backoff outage(Millis(50), Millis(1000));
    // Between attempts whose permits split (QuorumAttempt::split): short, and jittered so that
    // two runs that split each other do not meet again in step.
    Backoff split(Millis(5), Millis(100));
    int foreign_rechecks = 0;  // looks in a row at a lock that names no holder
    // Each attempt says who holds the lock: the status line needs no read of its own. It is
    // redrawn after each attempt (a block lasts until a release or the holder's TTL).
    WaitView view(progress, keys.key, start, give_up);
    QuorumWaitResult result;
    for (int attempt = 1;; ++attempt) {
        // Checked before every attempt: a waiter told to stop must never take the lock.
        if ((result.interrupted_by = stopping_signal(signals))) {
            if (attempt > 1) lock.leave(keys, token);
            return result;
        }
        result.last = lock.acquire(keys, token, ttl, info, ticket);
        if (result.last.acquired && (result.interrupted_by = stopping_signal(signals))) {
            lock.release(keys, token, Millis(0));  // which wakes the next waiter
            result.last.acquired = false;
            return result;
        }
        // --once-per: the slot's run is done; the attempt gave back whatever it took.
        if (result.last.slot_done) return result;
        // Nodes farther away than the default node timeout: at once again, with one that follows
        // their round trip (QuorumLock::follow says why that is safe).
        if (!result.last.acquired && result.last.late_round_trip &&
            lock.follow(*result.last.late_round_trip, ttl))
            continue;
        if (result.last.acquired) {
            if (attempt > 1)
                log::verbose("waited {} ({} attempts) for lock '{}'",
                             format_duration(std::chrono::ceil<Millis>(BootClock::now() - start)),
                             attempt, keys.key);
            return result;
        }
        bool decided = result.last.answered >= majority(result.last.nodes);
        Deadline now = BootClock::now();
        // A split is not a busy lock: the nodes had permits free, so a run that does not wait
        // tries a few more times (asking for the permit most nodes had free) before it says the
        // permits are taken.
        const bool split_retry = !waiting && result.last.split && attempt < split_attempts;
        if (now >= give_up && !split_retry) {
            if (waiting) lock.leave(keys, token);
            if (!decided) throw_unreachable(keys, result.last);
            return result;
        }
        if (!decided) {
            Millis delay = outage.next();
            log::verbose("waiting for lock '{}': only {} of {} nodes answered; trying again in {}",
                         keys.key, result.last.answered, result.last.nodes, format_duration(delay));
            pollfd p{signals.fd(), POLLIN, 0};
            ::poll(&p, 1, millis_until(std::min(give_up, now + delay)));  // a signal cuts it short
            continue;
        }
        outage.reset();
        if (result.last.split) {
            Millis delay = split.next();
            log::verbose("lock '{}': the nodes gave this run different permits; trying again in {}",
                         keys.key, format_duration(delay));
            pollfd p{signals.fd(), POLLIN, 0};
            Deadline until = split_retry ? now + delay : std::min(give_up, now + delay);
            ::poll(&p, 1, millis_until(until));  // a signal cuts it short
            continue;
        }
        split.reset();
        if (attempt == 1)
            log::verbose(
                "lock '{}' is busy ({} of {} nodes accepted, {} answered); waiting (up "
                "to {})",
                keys.key, result.last.accepted, result.last.nodes, result.last.answered,
                wait == Millis::max() ? std::string("forever") : format_duration(wait));
        if (view.enabled()) {
            AcquireResult between;  // no node named a holder: the votes were split
            between.holder_pttl = -2;
            // With no holder to show, a node's restart guard says why it waits, if one held back.
            view.saw(result.last.busy ? *result.last.busy
                                      : result.last.held_back_longest.value_or(between));
            view.show();
        }
        // A plain lock that no node names a holder of is an application's lock (whose own DEL
        // wakes no queue) or one reserved for the queue's head (whose hand-off wakes it): the
        // wait looks again at a growing interval, as a single node's waiter does (waiter.hpp),
        // so that the first is not waited out to its TTL. (Permits and shared holders always
        // keep their info, and their releases always wake the queue.)
        Deadline until = give_up;
        if (plain && !(result.last.busy && result.last.busy->holder))
            until = std::min(give_up, BootClock::now() + foreign_recheck_after(foreign_rechecks++));
        else
            foreign_rechecks = 0;
        lock.await_wake(keys, token, result.last, until, signals.fd());
    }
}

class QuorumBackend final : public LockBackend {
  public:
    QuorumBackend(const LockKeys& keys, const ConnectionOptions& conn,
                  const ReplicaPolicy& replicas, int permits, bool shared)
        : LockBackend(keys),
          lock_(conn.quorum, quorum_timeouts(conn), replicas, permits, shared, conn.timeouts),
          identity_(quorum_identity(conn.quorum)),
          permits_(permits),
          shared_(shared) {
        lock_.set_follow_round_trip(!conn.node_timeout_given);
    }

    Acquisition acquire(const std::string& token, Millis ttl, const HolderInfo* info, Millis wait,
                        SignalEvents& signals) override {
        lock_.set_busy_holder(busy_holder());
        lock_.set_restart_guard(restart_guard());
        QuorumWaitResult w = quorum_acquire_waiting(lock_, keys(), token, ttl, info, wait, signals,
                                                    wait_progress(), permits_ == 1 && !shared_);
        const QuorumAttempt& last = w.last;
        // The validity counts from when the attempt began (QuorumLock::lease_end).
        return acquisition(
            {w.interrupted_by, last.slot, last.slot_done, last.acquired, last.fence, last.permit,
             last.started},
            [&] { return busy_message(keys(), last, permits_, shared_); },
            [&] { return fmt::format("on {} of {} nodes", last.accepted, last.nodes); });
    }

    Release release(const std::string& token, Millis keep) override {
        return release_outcome(lock_.release(keys(), token, keep));
    }

    // The record counts where a majority wrote it: the slot is done when a majority marked it,
    // and the token was still held when a majority still had it.
    Release finish(const std::string& token, Millis keep, const RunRecord& record) override {
        QuorumRelease q = lock_.finish(keys(), token, keep, record);
        Release r = release_outcome(q);
        if (q.recorded.size() < lock_.majority())
            r.record_error =
                fmt::format("recorded on only {} of {} nodes", q.recorded.size(), lock_.size());
        else
            r.recorded = majority_record(q.recorded);
        return r;
    }

    void set_once_per(const std::optional<OncePer>& once) override { lock_.set_once_per(once); }

    bool holds(const std::string& token) override { return lock_.holds(keys(), token); }
    std::string identity() const override { return identity_; }

    // Not waiting for a node frozen since the acquire (QuorumLock::record_run), as the release
    // after it does not.
    RecordResult record_run(const std::string& token, const RunRecord& record) override {
        std::vector<RecordResult> recorded;
        for (const auto& r : lock_.record_run(keys(), token, record))
            if (r) recorded.push_back(*r);
        if (recorded.size() < lock_.majority())
            throw RedisUnavailable(
                fmt::format("recording the run of lock '{}': only {} of {} nodes wrote it",
                            keys().key, recorded.size(), lock_.size()));
        return majority_record(recorded);
    }

    RenewResult renew(const LockKeys& keys, const std::string& token, Millis ttl,
                      Deadline deadline) override {
        return lock_.renew(keys, token, ttl, deadline);
    }
    Deadline lease_end(Deadline sent, Millis ttl) const override {
        return lock_.lease_end(sent, ttl);
    }
    void set_cancel_fd(int fd) override { lock_.set_cancel_fd(fd); }
    Millis renew_timeout() const override { return lock_.renew_timeout(); }

  private:
    // What a majority of the nodes' records say: the median clock, held and slot written when
    // a majority says so, and the first problem any node reported.
    RecordResult majority_record(const std::vector<RecordResult>& recorded) const {
        std::vector<long long> clocks;
        std::size_t held = 0, written = 0;
        RecordResult out;
        for (const RecordResult& rec : recorded) {
            clocks.push_back(rec.end_ms);
            held += rec.still_held;
            written += rec.slot_written;
            if (out.problem.empty()) out.problem = rec.problem;
        }
        std::sort(clocks.begin(), clocks.end());
        out.end_ms = clocks[clocks.size() / 2];
        out.still_held = held >= lock_.majority();
        out.slot_written = written >= lock_.majority();
        return out;
    }

    // A lock found gone or taken on so many nodes that no majority can have held it to the end
    // was lost while the command ran.
    Release release_outcome(const QuorumRelease& r) {
        const std::size_t n = lock_.size();
        if (r.released >= lock_.majority()) return {};
        if (r.absent + r.not_owner > n - lock_.majority())
            return {Release::Outcome::lost,
                    fmt::format("was gone or taken on {} of {} nodes at release: the command ran "
                                "without a majority for a while",
                                r.absent + r.not_owner, n)};
        return {
            Release::Outcome::unknown,
            fmt::format("released on {} of {} nodes, {} did not answer{}", r.released, n, r.failed,
                        r.first_error ? ": " + r.first_error->message : std::string())};
    }

    QuorumLock lock_;
    std::string identity_;
    int permits_ = 1;
    bool shared_ = false;
};

}  // namespace

std::unique_ptr<LockBackend> make_quorum_backend(const LockKeys& keys,
                                                 const ConnectionOptions& conn,
                                                 const ReplicaPolicy& replicas, int permits,
                                                 bool shared) {
    return std::make_unique<QuorumBackend>(keys, conn, replicas, permits, shared);
}

}  // namespace redlock

// The Redlock quorum as a lock backend: N independent masters (several -u), the lock held while
// a majority holds it. Every operation goes to all nodes at once (QuorumLock).
//
// Waiting is the one wait loop (waiter.hpp) over QuorumTarget (quorum_wait.hpp): every node
// queues the waiters in one order (by ticket) and a release wakes the head; QuorumLock::acquire
// (quorum.cpp) makes the argument that this keeps order and cannot deadlock.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "lock/acquisition.hpp"
#include "lock/backend.hpp"
#include "lock/busy_text.hpp"
#include "lock/node/holder.hpp"
#include "lock/quorum/quorum.hpp"
#include "lock/quorum/quorum_math.hpp"
#include "lock/quorum_wait.hpp"
#include "lock/waiter.hpp"
#include "util/errors.hpp"

namespace redlock {
namespace {

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
        // A waiter accepts a release's hand-off (QuorumTarget::take_hand_off) for the claim
        // window of one node's waiter (node_backend.cpp): min(TTL, 5s).
        lock_.set_hand_off(std::min(ttl, Millis(5'000)));
        QuorumTarget target(lock_, keys(), token, ttl, info, wait > Millis(0), permits_, shared_);
        WaitResult w =
            acquire_waiting(target, keys(), ttl, wait, signals, wait_progress(), boot_clock());
        const QuorumAttempt& last = target.last();
        // The validity counts from when the attempt began (QuorumLock::lease_end), or for a
        // hand-off from its lease start, for the claim window (w.lease); a lock taken while a
        // signal came was given back (w.last.acquired is false then).
        return acquisition(
            {w.interrupted_by, last.slot, last.slot_done, w.last.acquired, last.fence, last.permit,
             w.lease_start, w.lease},
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

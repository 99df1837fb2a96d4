// The quorum as the target of the one wait loop (waiter.hpp): an attempt is a Redlock attempt on
// every node, a block waits for a majority of wake-ups (QuorumLock::await_wake), and giving up
// leaves every node's queue. A waiter queues on every node at its ticket and blocks until a
// majority wakes it (a release) or its holder's key expires, as a single node's waiter does; the
// loop's decisions (when to look again, when to give up, what a signal ends) are the same code.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lock/quorum/quorum.hpp"
#include "lock/waiter.hpp"
#include "util/backoff.hpp"

namespace redlock {

// How many attempts a run that does not wait makes when its permits split.
inline constexpr int split_attempts = 4;

class QuorumTarget final : public WaitTarget {
  public:
    // `waiting`: the run waits (--wait), so it takes a ticket, its place in every node's queue.
    QuorumTarget(QuorumLock& lock, const LockKeys& keys, const std::string& token, Millis ttl,
                 const HolderInfo* info, bool waiting, int permits, bool shared);

    AcquireAttempt attempt(Queueing queueing, bool& reached) override;
    void follow_master() override {}  // each node is a master of its own
    Blocked block(Millis block, int cancel_fd) override;
    WaitStatus status() override { return {}; }  // not asked: reads_status() is false
    // A quorum does not look: a lock that no node names a holder of is treated as an
    // application's (or one reserved for a head whose hand-off comes), looked at again at the
    // growing interval; a holder's release wakes the queue anyway.
    bool key_exists() override { return true; }
    // Leaves the queue on every node, deletes a lock of ours that an unanswered acquire may have
    // taken, and passes a wake-up it may have had on to the next (QuorumLock::leave).
    bool abandon() override {
        lock_.leave(keys_, token_);
        return false;
    }
    void release() override { lock_.release(keys_, token_, Millis(0)); }  // wakes the next
    int permits() const override { return permits_; }
    bool shared() const override { return shared_; }
    bool reads_status() const override { return false; }
    std::string busy_detail() const override;
    // The hand-off over a quorum (issue 35; take_hand_off in quorum_wait.cpp says when it is
    // taken): the claim window asked for, and once handed, its fence and its lease's start.
    Millis claim_window() const override {
        return ticket_ > 0 ? lock_.hand_off_claim().value_or(Millis(0)) : Millis(0);
    }
    long long handed_fence() const override { return last_.fence; }
    std::optional<Deadline> handed_since() const override { return last_.started; }

    // The last attempt as the quorum counted it (for the backend's messages and the fence).
    const QuorumAttempt& last() const { return last_; }

  private:
    [[noreturn]] void throw_unreachable() const;
    // Whether the hand-offs `wake` saw let the waiter start; then last_ says with what.
    bool take_hand_off(const QuorumWake& wake);

    QuorumLock& lock_;
    const LockKeys& keys_;
    const std::string& token_;
    Millis ttl_;
    const HolderInfo* info_;
    const long long ticket_;
    int permits_;
    bool shared_;
    QuorumAttempt last_;
    // Per node: the send time of our last command there whose reply showed our wake-up list
    // empty (an acquire that answered, which empties it, or a wait that timed out).
    std::vector<std::optional<Deadline>> empty_since_;
    int splits_ = 0;  // split attempts so far, for a run that does not wait
    Backoff split_{Millis(5), Millis(100)};
};

}  // namespace redlock

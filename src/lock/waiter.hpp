// --wait: waiting for a busy lock without polling. A waiter joins the lock's queue in the same
// script as its failed attempt and blocks on its own wake-up list (BLPOP); a release pops the
// queue's head and wakes exactly that waiter, so the lock passes in arrival order and a hand-off
// costs a few commands however many wait. Each block is bounded by the holder's remaining TTL,
// so a holder that died without releasing is still taken over when its key expires; a waiter
// that wakes that way and finds the holder alive keeps its place in the queue. A holder that is
// not a redlock-run (an application's SET NX PX, released with its own DEL) wakes nobody: behind
// one, the waiter looks again at a growing interval (foreign_recheck_after) instead.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "lock/node/acquire_retry.hpp"
#include "lock/node/lock.hpp"
#include "lock/node/lock_replies.hpp"
#include "lock/wait_progress.hpp"
#include "util/clock.hpp"
#include "util/signals.hpp"

namespace redlock {

struct WaitResult {
    AcquireResult last;                 // the final attempt: acquired, or the holder's state
    std::optional<int> interrupted_by;  // a signal ended the wait before the lock was taken
    Deadline lease_start{};             // when the successful acquire was sent
    // How long the lease from lease_start is: the TTL (zero here), or, for a lock a release
    // handed over (WaitTarget::Blocked::handed), its claim window until the first renewal.
    Millis lease{0};
};

// What the wait loop asks of Redis for one token of one lock. The product has two: a LockNode
// on its connection, blocking in BLPOP (below), and a quorum of them (QuorumTarget,
// quorum_wait.hpp), so that one loop serves every topology; a unit test's answers on virtual
// time (tests/unit/lock/waiter_test.cpp), so that the loop's decisions (when to look again, when
// to give up, what a signal ends) are proved exactly, without a server and without a wall clock.
class WaitTarget {
  public:
    // handed: a release took the lock for us (hand_off_head, src/lock/scripts/lib/take.lua) for
    // our claim window; handed_fence() is its fence.
    enum class Blocked { woken, timed_out, cancelled, handed };

    virtual ~WaitTarget() = default;
    // One acquire, re-sent while its reply is lost (acquire_resolving, whose contract this is).
    // Throws RedisUnavailable while Redis is away.
    virtual AcquireAttempt attempt(Queueing queueing, bool& reached) = 0;
    // Before every attempt but the first: the master the sentinels name now.
    virtual void follow_master() = 0;
    // Blocks on this waiter's wake-up list for up to `block`: woken (a release handed us the
    // lock), timed out, or cancelled (`cancel_fd`, the signals, became readable). Throws
    // RedisUnavailable when the connection broke meanwhile, anything else on an error reply.
    virtual Blocked block(Millis block, int cancel_fd) = 0;
    // The holder and our place as they are now, for the status line (throws Error on failure).
    virtual WaitStatus status() = 0;
    // Whether the lock's key exists now (throws Error on failure). Asked after a busy reply
    // without holder info: a key is then an application's lock; no key, a lock reserved for the
    // queue's head, whose hand-off wakes the next waiter.
    virtual bool key_exists() = 0;
    // LockNode::abandon and LockNode::release for this token (they throw as those do).
    virtual bool abandon() = 0;
    virtual void release() = 0;
    virtual int permits() const = 0;
    virtual bool shared() const = 0;
    // Whether status() can be asked between two slices of a block (the live status line's
    // reads). A quorum cannot cheaply: its block is a BLPOP on every node, and its line shows
    // what each attempt found.
    virtual bool reads_status() const { return true; }
    // What the "lock is busy; waiting" line adds after the first busy attempt: a quorum's tally.
    virtual std::string busy_detail() const { return {}; }
    // The claim window this waiter's acquires ask a release to hand the lock over for (zero: no
    // hand-off asked; a release then only wakes it), and after Blocked::handed the fence.
    virtual Millis claim_window() const { return Millis(0); }
    virtual long long handed_fence() const { return 0; }
    virtual int handed_permit() const { return 1; }  // after Blocked::handed: 1..--permits
    // After Blocked::handed: when the hand-off's lease starts, when the target knows it better
    // than the loop's last empty look (a quorum's, per node: QuorumTarget).
    virtual std::optional<Deadline> handed_since() const { return std::nullopt; }
};

// A wake-up that hands us the lock (issue 35): 'handoff:<fence>' from a plain or shared lock's
// release (lib/take.lua, shared.lua), 'handoff:<fence>:<permit>' from a permits lock's
// (permits.lua).
struct HandOff {
    long long fence = 0;
    int permit = 1;
};
// `payload` read as a hand-off for a lock of `permits` (1: plain or shared), each number
// range-checked: nullopt for anything else (another shape, a fence or permit out of range),
// which the waiter treats as a plain wake-up and follows with an acquire, trusting nothing.
std::optional<HandOff> parse_hand_off(std::string_view payload, int permits);

// Behind a holder that a release will not wake us from (a key without redlock-run holder info: an
// application's lock, released with its own DEL), the `rechecks`th look comes this long after
// the one before (bounded by the holder's TTL too): 100ms doubling to 2s, so that a short foreign
// hold is followed promptly and a long one costs Redis one attempt every 2s.
Millis foreign_recheck_after(int rechecks);

// Tries to acquire, waiting up to `wait` (Millis::max(): without bound; zero: a single try).
// Signals that would end the process (TERM, INT, HUP, QUIT, USR1, USR2) end the wait.
// While waiting, Redis being unavailable (a restart, a failover, RedisUnavailable) is retried
// with backoff until `wait` runs out, then thrown as RedisUnavailable; a single try throws at once.
// `progress`, when set, is called while the run waits, at most once a second (wait_progress.hpp);
// the wait then blocks in slices of a second with one small read between two.
// Every decision is timed on `clock` (the boot clock in the product); only the target's own
// socket deadlines are not.
WaitResult acquire_waiting(WaitTarget& target, const LockKeys& keys, Millis ttl, Millis wait,
                           SignalEvents& signals, const WaitProgressFn& progress, Clock& clock);

// The same over `node`'s connection: the single node's waiter (a quorum's target is in
// quorum_backend.cpp: one loop serves every topology).
WaitResult acquire_waiting(LockNode& node, const LockKeys& keys, const std::string& token,
                           Millis ttl, const HolderInfo* info, Millis wait, SignalEvents& signals,
                           const WaitProgressFn& progress = WaitProgressFn(),
                           Clock& clock = boot_clock());

}  // namespace redlock

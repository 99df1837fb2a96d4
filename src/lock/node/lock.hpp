// The lock protocol against one Redis node: acquire (SET NX PX + fence INCR), renew
// (compare-token-then-PEXPIRE) and release (compare-and-delete), each step in the node's mode
// (lock_mode.hpp). It knows nothing of processes or threads; a quorum is built of several.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <optional>

#include "lock/ledger/ledger.hpp"
#include "lock/node/holder_info.hpp"
#include "lock/node/keys.hpp"
#include "lock/node/lock_mode.hpp"
#include "lock/node/results.hpp"
#include "redis/connection.hpp"
#include "util/clock.hpp"

namespace redlock {

// What a held-back acquire says of it: "Redis on X restarted 3s ago without the lock's data; a
// holder from before may still run, so it is held back for 7s more (--restart-guard)".
std::string restart_guard_text(const AcquireResult& busy, std::string_view where);
// "3s ago", or "under 1s ago" for an uptime of 0 whole seconds.
std::string restarted_ago(long long uptime_s);

class LockNode {
  public:
    // The mode is chosen here, once: permits > 1: the permits protocol (permits.hpp), in which
    // the node remembers the permit it acquired, for the renewals and the release. shared: the
    // shared protocol (shared.hpp); never both (the CLI refuses the combination; permits wins).
    // Else the plain lock (plain_mode.hpp).
    explicit LockNode(Connection& conn, int permits = 1, bool shared = false);

    // `info`, when given, is recorded beside the lock (see HolderInfo). When the lock is busy,
    // `queueing` says whether `token` joins the waiters' queue, in the same step: at its end, or
    // with a `ticket` > 0 at that place in a queue ordered by tickets (a quorum's waiters).
    AcquireResult acquire(const LockKeys& keys, const std::string& token, Millis ttl,
                          const HolderInfo* info = nullptr, Queueing queueing = Queueing::none,
                          long long ticket = 0);
    RenewResult renew(const LockKeys& keys, const std::string& token, Millis ttl,
                      Deadline deadline);
    // keep > 0 shortens the lock to `keep` instead of deleting it (--min-hold); the waiters are
    // woken only by a real delete.
    ReleaseResult release(const LockKeys& keys, const std::string& token, Millis keep = Millis(0));
    // Giving up on the lock (abandon.lua): deletes it if it holds `token` (an acquire whose reply
    // was lost may have taken it), leaves the waiters' queue and hands on a wake-up it may have
    // been given. Returns whether it deleted a lock of ours.
    bool abandon(const LockKeys& keys, const std::string& token);
    // After the command: records the run (lock/ledger/ledger.hpp) and releases as release() does,
    // in one script and one round trip, so that a failing record cannot keep the lock from being
    // given back: ledger.lua for a plain lock, the 'finish' operation of permits.lua or
    // shared.lua for a permit or a shared hold (each judges "still held" by the run's own token
    // where that protocol keeps it).
    FinishResult finish(const LockKeys& keys, const std::string& token, Millis keep,
                        const RunRecord& record);

    // --once-per: every acquire from now on reads the slot by the node's clock and, when the
    // slot's run is already done, answers slot_done instead of taking a free lock.
    void set_once_per(const std::optional<OncePer>& once) { settings_.once = once; }
    // Whether a busy reply carries the holder's info (AcquireResult::holder); without it a busy
    // acquire is {0, pttl} and costs Redis less (LockBackend::set_busy_holder).
    void set_busy_holder(bool wanted) { settings_.busy_holder = wanted; }
    // Permits: the permit the next acquires ask for, taken when it is free on the node (0: the
    // node's own choice, the k-th free permit for its k-th waiter; permits.lua says why).
    void set_wanted_permit(int permit) { settings_.wanted_permit = permit; }
    // --restart-guard: how long after losing its data (a restart without persistence) a node
    // holds a free lock back; nullopt: the TTL of each acquire; zero: never. Off until set: the
    // backends set the run's choice (LockBackend::set_restart_guard, default the TTL).
    void set_restart_guard(std::optional<Millis> guard) { settings_.restart_guard = guard; }
    // A quorum's fence floor for the next acquires (NodeSettings::fence_floor).
    void set_fence_floor(std::optional<long long> floor) { settings_.fence_floor = floor; }
    // A waiter that may start on a lock (or a permit) a release handed it (issue 35): its
    // queued acquires ask for the hand-off, with the key set for `claim` until its first renewal
    // (hand_off_head in lib/take.lua says why that is safe). nullopt (the default, and what the
    // backends choose for --min-replicas and a quorum; never with --once-per): woken only.
    void set_hand_off(std::optional<Millis> claim) { settings_.hand_off_claim = claim; }
    std::optional<Millis> hand_off_claim() const {
        return settings_.once ? std::nullopt : settings_.hand_off_claim;
    }
    // A release handed us the lock (`permit`, for a permits lock): renewals and the release
    // follow it (waiter.cpp calls this on a 'handoff:' wake-up).
    void handed_over(int permit) { mode_->handed_over(permit); }

    // A quorum waiter that took this node but no majority: gives the node back and keeps its
    // place at `ticket` in the same step, marked alive for `alive` (abandon.lua).
    void step_back(const LockKeys& keys, const std::string& token, long long ticket, Millis alive);
    // A quorum waiter that holds the lock on a majority: leaves this node's queue, keeping its
    // key here if this node took it (abandon.lua).
    void leave_queue(const LockKeys& keys, const std::string& token);
    // Permits on a quorum: the majority agreed on `permit`. From now on this node renews and
    // releases that permit; a different one that this node gave the token (it chose otherwise,
    // or answered late) is given back here and now, and the queue left.
    void settle_permit(const LockKeys& keys, const std::string& token, int permit);

    // The split-phase form of acquire() and finish(), for QuorumLock's rounds, which send to
    // every node from one thread (Connection::send): the one script call the step sends with
    // the settings and mode as they are now, and what its reply means. nullopt where the mode's
    // step is more than one call (permits and shared); then only acquire() and finish() serve.
    // The acquire call goes out with setup_give_back(keys, token), as acquire() sends it.
    std::optional<ScriptCall> acquire_call(const LockKeys& keys, const std::string& token,
                                           Millis ttl, const HolderInfo* info, Queueing queueing,
                                           long long ticket) const {
        return mode_->acquire_call(conn_, settings_, keys, token, ttl, info, queueing, ticket);
    }
    AcquireResult acquire_reply(const LockKeys& keys, const Reply& reply) {
        return mode_->acquire_reply(conn_, settings_, keys, reply);
    }
    std::optional<ScriptCall> finish_call(const LockKeys& keys, const std::string& token,
                                          Millis keep, const RunRecord& record) const {
        return mode_->finish_call(keys, token, keep, record);
    }
    FinishResult finish_reply(const LockKeys& keys, const Reply& reply) {
        return mode_->finish_reply(keys, reply);
    }
    // The acquire goes out in the set-up's write of a new connection (Connection::first_command);
    // when that set-up fails after the acquire ran, this gives back what it took (lock.cpp).
    // It refers to `keys` and `token`, which must outlive it.
    SetupGiveBack setup_give_back(const LockKeys& keys, const std::string& token);

    // Whether `token` holds the lock here, as a nested run asks of its parent: the key, one of
    // its permits (whatever N this node was given) or a shared hold (whatever mode this is).
    bool holds(const LockKeys& keys, const std::string& token);

    Connection& connection() { return conn_; }
    std::string describe() const { return conn_.endpoint().describe(); }
    // What holds `token` here once acquired (with `permit`, for a permits lock).
    HeldKeys held_keys(const LockKeys& keys, const std::string& token, int permit) const {
        return mode_->held_keys(keys, token, permit);
    }
    int permits() const { return mode_->permits(); }
    bool shared() const { return mode_->shared(); }

  private:
    Connection& conn_;
    std::unique_ptr<LockMode> mode_;
    NodeSettings settings_;
};

}  // namespace redlock

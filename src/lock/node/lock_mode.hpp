// What one node's lock steps do differently by mode: plain (lock/node/plain_mode.hpp), --permits N
// (lock/node/permits.hpp) and --shared (lock/node/shared.hpp), each one class behind LockMode.
// LockNode picks its mode once, when built, and never asks which one it is in.
#pragma once

#include <optional>
#include <string>

#include "lock/ledger/ledger.hpp"
#include "lock/node/holder_info.hpp"
#include "lock/node/keys.hpp"
#include "lock/node/results.hpp"
#include "redis/connection.hpp"
#include "redis/script.hpp"
#include "util/clock.hpp"

namespace redlock {

// Whether a failed acquire joins (or keeps its place in) the waiters' queue (see waiter.hpp).
enum class Queueing { none, wait };

// How long a waiter blocks when the holder's key has no TTL (a foreign client's lock): there is
// no expiry to wait for, so it looks again this often.
inline constexpr Millis no_ttl_recheck{1'000};

// How long a wake-up pushed for a waiter may linger unclaimed: the waiter needs it for only a
// round trip, and one that died never claims it.
inline constexpr Millis wake_linger{10'000};

// What the node's setters chose for its acquires (LockNode::set_once_per and the others say
// what each means); a mode reads the ones its protocol knows.
struct NodeSettings {
    std::optional<OncePer> once;
    bool busy_holder = true;
    int wanted_permit = 0;
    std::optional<Millis> restart_guard = Millis(0);
    // A plain waiter's claim window: its acquires ask a release to hand it the lock for that
    // long (acquire.lua's 'handoff:C'); nullopt: only to wake it (LockNode::set_hand_off).
    std::optional<Millis> hand_off_claim;
    // A quorum's fence floor for a plain acquire (acquire.lua's ARGV[10], next_fence in
    // lib/queue.lua): the fence drawn is at least one above it. nullopt on a single node.
    std::optional<long long> fence_floor;

    // The acquire scripts' argument for an acquire with `ttl`: the guard in ms, "0" for none.
    std::string restart_guard_arg(Millis ttl) const {
        return std::to_string(restart_guard.value_or(ttl).count());
    }
};

// The acquire scripts' queueing argument: "" (none), "1" (at the queue's end) or "ticket:N"
// (at that place in a queue ordered by tickets, a quorum's waiters).
std::string queue_arg(Queueing queueing, long long ticket);
// The same for a waiter that accepts a hand-off (settings.hand_off_claim): "handoff:C" on a
// single node, "ticket:T:handoff:C" for a quorum's, which the acquire scripts take as "1" or
// "ticket:T" plus what a release needs to hand it the lock (take_note, lib/queue.lua).
std::string queue_arg(const NodeSettings& settings, Queueing queueing, long long ticket);
// A waiter's ':alive' must outlast its block (bounded by the returned TTL) plus the retry that
// follows it, which a slow server may stretch to a command timeout or two.
Millis alive_grace(const Connection& conn);

// The keys that hold a token's lock on a node, as a fence step compares the token against.
struct HeldKeys {
    std::string key;
    std::string info;
};

// One mode's protocol against one node; LockNode documents each step. A mode object belongs to
// one node and may remember what its acquire took (a permit) for the steps after it.
class LockMode {
  public:
    virtual ~LockMode() = default;

    // `give_back` (LockNode::setup_give_back): what undoes the acquire where it went out in a new
    // connection's set-up and the set-up failed (Connection::first_command).
    virtual AcquireResult acquire(Connection& conn, const NodeSettings& settings,
                                  const LockKeys& keys, const std::string& token, Millis ttl,
                                  const HolderInfo* info, Queueing queueing, long long ticket,
                                  const SetupGiveBack* give_back) = 0;
    // The split-phase form of acquire and finish (LockNode::acquire_call says what for): the one
    // script call the step sends, and what its reply means. nullopt where the mode's step is
    // more than that one call; then its synchronous method alone serves.
    virtual std::optional<ScriptCall> acquire_call(const Connection&, const NodeSettings&,
                                                   const LockKeys&, const std::string&, Millis,
                                                   const HolderInfo*, Queueing, long long) const {
        return std::nullopt;
    }
    virtual AcquireResult acquire_reply(Connection& conn, const NodeSettings& settings,
                                        const LockKeys& keys, const Reply& reply);
    virtual std::optional<ScriptCall> finish_call(const LockKeys&, const std::string&, Millis,
                                                  const RunRecord&) const {
        return std::nullopt;
    }
    virtual FinishResult finish_reply(const LockKeys& keys, const Reply& reply);
    virtual RenewResult renew(Connection& conn, const LockKeys& keys, const std::string& token,
                              Millis ttl, Deadline deadline) = 0;
    virtual ReleaseResult release(Connection& conn, const LockKeys& keys, const std::string& token,
                                  Millis keep) = 0;
    virtual FinishResult finish(Connection& conn, const LockKeys& keys, const std::string& token,
                                Millis keep, const RunRecord& record) = 0;
    virtual bool abandon(Connection& conn, const LockKeys& keys, const std::string& token) = 0;
    virtual void step_back(Connection& conn, const LockKeys& keys, const std::string& token,
                           long long ticket, Millis alive) = 0;
    // A release handed this node's lock to the waiting `token` (waiter.cpp): a permits lock
    // renews and releases `permit` from now on, as after its own acquire; the others hold
    // nothing more to remember.
    virtual void handed_over(int /*permit*/) {}
    // Only a permits lock has a permit to settle on; the other modes do nothing.
    virtual void settle_permit(Connection& conn, const LockKeys& keys, const std::string& token,
                               int permit) = 0;
    // What holds `token` on the node once acquired (with `permit`, for a permits lock).
    virtual HeldKeys held_keys(const LockKeys& keys, const std::string& token,
                               int permit) const = 0;

    virtual int permits() const = 0;  // N of --permits N; 1 for the other modes
    virtual bool shared() const = 0;
};

}  // namespace redlock

// The lock protocol against one Redis node: acquire (SET NX PX + fence INCR), renew
// (compare-token-then-PEXPIRE) and release (compare-and-delete). It knows nothing of processes
// or threads, so a quorum of nodes can later be built from several of these.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <optional>

#include "lock/holder_info.hpp"
#include "lock/keys.hpp"
#include "lock/ledger.hpp"
#include "lock/results.hpp"
#include "redis/connection.hpp"
#include "util/clock.hpp"

namespace redlock {

// What a held-back acquire says of it: "Redis on X restarted 3s ago without the lock's data; a
// holder from before may still run, so it is held back for 7s more (--restart-guard)".
std::string restart_guard_text(const AcquireResult& busy, std::string_view where);
// "3s ago", or "under 1s ago" for an uptime of 0 whole seconds.
std::string restarted_ago(long long uptime_s);

// Whether a failed acquire joins (or keeps its place in) the waiters' queue (see waiter.hpp).
enum class Queueing { none, wait };

// How long a waiter blocks when the holder's key has no TTL (a foreign client's lock): there is
// no expiry to wait for, so it looks again this often.
inline constexpr Millis no_ttl_recheck{1'000};

// How long a wake-up pushed for a waiter may linger unclaimed: the waiter needs it for only a
// round trip, and one that died never claims it.
inline constexpr Millis wake_linger{10'000};

class LockNode {
  public:
    // permits > 1: the permits protocol (permits.hpp), in which the node remembers the permit
    // it acquired, for the renewals and the release. shared: the shared protocol (shared.hpp);
    // never both (the CLI refuses the combination).
    explicit LockNode(Connection& conn, int permits = 1, bool shared = false)
        : conn_(conn), permits_(permits), shared_(shared) {}

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
    // After the command: records the run (lock/ledger.hpp) and releases as release() does, in
    // one script and one round trip, so that a failing record cannot keep the lock from being
    // given back: ledger.lua for a plain lock, the 'finish' operation of permits.lua or
    // shared.lua for a permit or a shared hold (each judges "still held" by the run's own token
    // where that protocol keeps it).
    FinishResult finish(const LockKeys& keys, const std::string& token, Millis keep,
                        const RunRecord& record);

    // --once-per: every acquire from now on reads the slot by the node's clock and, when the
    // slot's run is already done, answers slot_done instead of taking a free lock.
    void set_once_per(const std::optional<OncePer>& once) { once_ = once; }
    // Whether a busy reply carries the holder's info (AcquireResult::holder); without it a busy
    // acquire is {0, pttl} and costs Redis less (LockBackend::set_busy_holder).
    void set_busy_holder(bool wanted) { busy_holder_ = wanted; }
    // Permits: the permit the next acquires ask for, taken when it is free on the node (0: the
    // node's own choice, the k-th free permit for its k-th waiter; permits.lua says why).
    void set_wanted_permit(int permit) { wanted_permit_ = permit; }
    // --restart-guard: how long after losing its data (a restart without persistence) a node
    // holds a free lock back; nullopt: the TTL of each acquire; zero: never. Off until set: the
    // backends set the run's choice (LockBackend::set_restart_guard, default the TTL).
    void set_restart_guard(std::optional<Millis> guard) { restart_guard_ = guard; }
    // The acquire scripts' argument for an acquire with `ttl`: the guard in ms, "0" for none.
    std::string restart_guard_arg(Millis ttl) const {
        return std::to_string(restart_guard_.value_or(ttl).count());
    }

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

    // Permits: whether `token` holds one of the lock's permits, whatever N this node was given.
    bool holds_permit(const LockKeys& keys, const std::string& token);
    // Shared: whether `token` is one of the lock's shared holders.
    bool holds_shared(const LockKeys& keys, const std::string& token);
    // Whether `token` holds the lock here, as a nested run asks of its parent: the key, one of
    // its permits (whatever N this node was given) or a shared hold (whatever mode this is).
    bool holds(const LockKeys& keys, const std::string& token);

    Connection& connection() { return conn_; }
    std::string describe() const { return conn_.endpoint().describe(); }
    int permits() const { return permits_; }
    bool shared() const { return shared_; }

  private:
    // The acquire goes out in the set-up's write of a new connection (Connection::first_command);
    // when that set-up fails after the acquire ran, this gives back what it took (lock.cpp).
    SetupGiveBack setup_give_back(const LockKeys& keys, const std::string& token);
    // The permits protocol (permits.cpp).
    AcquireResult acquire_permit(const LockKeys& keys, const std::string& token, Millis ttl,
                                 const HolderInfo* info, Queueing queueing, long long ticket);
    RenewResult renew_permit(const LockKeys& keys, const std::string& token, Millis ttl,
                             Deadline deadline);
    ReleaseResult release_permit(const LockKeys& keys, const std::string& token, Millis keep);
    FinishResult finish_permit(const LockKeys& keys, const std::string& token, Millis keep,
                               const RunRecord& record);
    bool abandon_permit(const LockKeys& keys, const std::string& token,
                        const std::string& mode = "", Millis alive = Millis(0));
    void describe_shared_holders(const LockKeys& keys, AcquireResult& busy);
    // The shared protocol (shared.cpp).
    AcquireResult acquire_shared(const LockKeys& keys, const std::string& token, Millis ttl,
                                 const HolderInfo* info, Queueing queueing, long long ticket);
    RenewResult renew_shared(const LockKeys& keys, const std::string& token, Millis ttl,
                             Deadline deadline);
    ReleaseResult release_shared(const LockKeys& keys, const std::string& token, Millis keep);
    FinishResult finish_shared(const LockKeys& keys, const std::string& token, Millis keep,
                               const RunRecord& record);
    bool abandon_shared(const LockKeys& keys, const std::string& token,
                        const std::string& mode = "", Millis alive = Millis(0));

    Connection& conn_;
    int permits_ = 1;
    bool shared_ = false;
    int permit_ = 0;  // permits: the one acquired (0: none yet; release --token looks it up)
    int wanted_permit_ = 0;
    std::optional<OncePer> once_;
    bool busy_holder_ = true;
    std::optional<Millis> restart_guard_ = Millis(0);
};

}  // namespace redlock

// One lock, every topology: what the run (and its renewer) asks of "a lock on some Redis". The
// single-node backend serves redis://, rediss://, unix://, redis-sentinel:// and
// redis-cluster:// alike (they differ only below the Connection); the quorum backend composes N
// nodes with the Redlock algorithm. Nothing above this interface asks which one it has, so a
// feature written against it works on every topology, and tests plug a fake in here. The
// operator commands ask its sibling, LockInspector (inspector.hpp), built by make_inspector.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "lock/ledger/ledger.hpp"
#include "lock/node/holder_info.hpp"
#include "lock/node/keys.hpp"
#include "lock/node/lock.hpp"
#include "lock/node/replicas.hpp"
#include "lock/quorum/options.hpp"
#include "lock/wait_progress.hpp"
#include "util/clock.hpp"
#include "util/signals.hpp"

namespace redlock {

// How much earlier than Redis we treat the lease as over: room for clock-rate differences
// between this host and the Redis host (1%, as the Redlock spec's drift factor) plus a fixed
// allowance for delivering the signal to the command.
Millis lease_margin(Millis ttl);

struct Acquisition {
    bool acquired = false;
    long long fence = 0;     // when acquired: the fencing token, above every earlier one
    Deadline lease_start{};  // when acquired: the lease counts from here (lease_end below)
    std::string where;       // when acquired: "on 127.0.0.1:6379", "on 3 of 3 nodes"
    int permit = 1;          // when acquired: which of the --permits N (1 for a plain lock)
    std::string busy;        // when not: "lock 'k' is held by ...", without what we did about it
    // When acquired: how long that lease is, until the first renewal: the TTL (zero here), or
    // for a lock a release handed over, its claim window (Renewer: renewed early).
    Millis lease{0};
    std::optional<int> interrupted_by;  // a signal ended the wait before the lock was taken
    // --once-per (set_once_per): the slot by the lock's clock, when acquired or skipped; and
    // when the lock was not taken because that slot's run is already done, who did it.
    std::optional<long long> slot;
    std::optional<SlotRecord> slot_done;
};

struct Release {
    enum class Outcome;
    Release() = default;
    Release(Outcome o, std::string d) : outcome(o), detail(std::move(d)) {}

    enum class Outcome {
        released,  // ours until now, given back (or shortened to `keep`)
        lost,      // found gone or taken: the command ran without the lock for a while
        unknown,   // could not be reached; the lock expires by itself
    } outcome = Outcome::released;
    std::string detail;  // for lost and unknown: what was seen, for the message
    // finish(): what the record step did; nullopt when it failed (record_error says why).
    std::optional<RecordResult> recorded;
    std::string record_error;
};

class LockBackend {
  public:
    virtual ~LockBackend() = default;
    const LockKeys& keys() const { return keys_; }

    // Takes the lock for `token`, waiting up to `wait` (zero: one try; Millis::max(): no bound)
    // for a hand-off. The signals that end a run (TERM, INT, ...) end the wait; a waiter told
    // to stop never takes the lock. Throws Error when Redis cannot decide (unreachable, ...);
    // whatever a failed attempt may have left behind is cleaned up first.
    virtual Acquisition acquire(const std::string& token, Millis ttl, const HolderInfo* info,
                                Millis wait, SignalEvents& signals) = 0;
    // While acquire() waits, `progress` is called about once a second with what the wait knows
    // (the holder, our place in the queue, the time waited and left), for the run to show.
    void set_wait_progress(WaitProgressFn progress) { wait_progress_ = std::move(progress); }
    // Whether a busy answer is to name the holder (its recorded info, for "held by host/pid/user
    // for 12m" and the wait line). A run that shows neither (-q without --wait) says false: a
    // busy attempt then costs Redis about half as much (issue 21: a fleet's cron herd).
    void set_busy_holder(bool wanted) { busy_holder_ = wanted; }
    // --restart-guard: how long a node that lost its data (a restart without persistence) holds
    // a free lock back (quorum: each node for itself); nullopt: the acquire's TTL; zero: never.
    void set_restart_guard(std::optional<Millis> guard) { restart_guard_ = guard; }
    // Gives the lock back, or with keep > 0 shortens it to `keep` (--min-hold). Never throws.
    virtual Release release(const std::string& token, Millis keep) = 0;
    // Whether `token` holds the lock right now (a nested run checks its parent's token).
    virtual bool holds(const std::string& token) = 0;
    // Where the lock lives, as REDLOCK_REDIS says it: a nested run of the same name on the same
    // identity is the parent's lock (run/reentry.hpp).
    virtual std::string identity() const = 0;

    // --once-per and the run ledger (lock/ledger/ledger.hpp).
    // From now on every acquire reads the slot by the lock's clock (quorum: each node's) in the
    // same script and, when the slot's run is already done, leaves a free lock alone and says
    // so (Acquisition::slot_done): no round trip of its own before the command.
    virtual void set_once_per(const std::optional<OncePer>& once) = 0;
    // After the command, instead of release(): records the run (the ledger entry, the completed
    // slot) and gives the lock back in one round trip (quorum: on every node at once; the slot
    // counts as written when a majority wrote it). The release is exactly release()'s, and a
    // record that cannot be written never keeps it from happening. Never throws.
    virtual Release finish(const std::string& token, Millis keep, const RunRecord& record) = 0;
    // Records a run that holds no lock (busy, skipped: --ledger-busy) in one round trip.
    // Throws Error.
    virtual RecordResult record_run(const std::string& token, const RunRecord& record) = 0;

    // What the renewer (run/renewer.hpp) needs, from its own thread.

    // Extends the lock; not_owner when it can no longer be ours. Throws (RedisUnavailable, ...)
    // when the outcome is unknown, which the renewer retries until the lease runs out.
    virtual RenewResult renew(const LockKeys& keys, const std::string& token, Millis ttl,
                              Deadline deadline) = 0;
    // The latest moment this host may still believe it holds the lock after an acquire or renew
    // that started at `sent` and succeeded.
    virtual Deadline lease_end(Deadline sent, Millis ttl) const = 0;
    // While set (>= 0), a readable `fd` aborts a renewal in flight (the renewer's stop signal).
    virtual void set_cancel_fd(int fd) = 0;
    // The longest a single renewal may take before it counts as failed.
    virtual Millis renew_timeout() const = 0;
    // Before each renewal: find out where the lock's node is now (Sentinel), by `cap` at most.
    virtual void follow_master(Deadline /*cap*/) {}
    // After each renewal Redis accepted, before the lease is extended; `cap` is the lease's
    // current end. Throwing counts as a failed renewal (retried until the lease runs out).
    // --min-replicas WAITs here: a renewal the replicas do not have proves nothing durable.
    virtual void confirm_renewal(Deadline /*cap*/) {}

  protected:
    explicit LockBackend(LockKeys keys) : keys_(std::move(keys)) {}
    const WaitProgressFn& wait_progress() const { return wait_progress_; }
    bool busy_holder() const { return busy_holder_; }
    std::optional<Millis> restart_guard() const { return restart_guard_; }

  private:
    LockKeys keys_;
    WaitProgressFn wait_progress_;
    bool busy_holder_ = true;
    std::optional<Millis> restart_guard_;
};

// The backend for `conn`'s topology: a quorum when it names several nodes, else a single node.
// --min-replicas is honoured by both: a quorum node whose WAIT falls short does not count.
// `permits` > 1 (--permits) lets that many holders in at once, on every topology (a quorum's
// holder holds the same permit on a majority). `shared` (--shared) makes this run a shared holder
// (permits > 1 refuses it: UsageError).
std::unique_ptr<LockBackend> make_backend(const LockKeys& keys, const ConnectionOptions& conn,
                                          const ReplicaPolicy& replicas, int permits = 1,
                                          bool shared = false);
std::unique_ptr<LockBackend> make_node_backend(const LockKeys& keys, const ConnectionOptions& conn,
                                               const ReplicaPolicy& replicas, int permits = 1,
                                               bool shared = false);
std::unique_ptr<LockBackend> make_quorum_backend(const LockKeys& keys,
                                                 const ConnectionOptions& conn,
                                                 const ReplicaPolicy& replicas, int permits = 1,
                                                 bool shared = false);

}  // namespace redlock

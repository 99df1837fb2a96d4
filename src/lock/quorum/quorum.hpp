// The Redlock algorithm over N >= 3 independent Redis masters (several -u): every operation goes
// to all nodes at once, each bounded by --node-timeout, and counts as done when a majority agrees
// in time. The per-node protocol is LockNode's, unchanged, behind QuorumNode (quorum_node.hpp);
// this file adds the counting, the validity arithmetic (quorum_math.hpp) and a fence that stays
// monotonic across the quorum.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lock/ledger/ledger.hpp"
#include "lock/node/holder_info.hpp"
#include "lock/node/keys.hpp"
#include "lock/node/lock.hpp"
#include "lock/node/replicas.hpp"
#include "lock/quorum/options.hpp"
#include "lock/quorum/quorum_node.hpp"
#include "redis/connection.hpp"

namespace redlock {

// One node's failure in a quorum operation: its message and the exit code it would map to alone.
struct NodeError {
    std::string message;
    int code = 0;
    bool cancelled = false;  // the operation was cut short by the cancel descriptor (Cancelled)
};

struct QuorumAttempt {
    bool acquired = false;
    long long fence = 0;       // when acquired: the quorum's fence (above every earlier one)
    std::size_t nodes = 0;     // N
    std::size_t answered = 0;  // nodes that replied to the acquire at all
    std::size_t accepted = 0;  // nodes that gave us the lock (permits: the same permit)
    int permit = 1;            // --permits N: the permit the most nodes gave us, 1..N
    // --permits N: nodes gave us permits, but no one permit on a majority. Their free permits
    // differed for a moment (a release reached some nodes first), so each gave its k-th free
    // one, not the same: worth trying again at once, not waiting for a wake-up that may never
    // come (what the attempt took it gave back, which woke someone else).
    bool split = false;
    Deadline started{};  // when the attempt began: the validity counts from here
    Millis elapsed{0};
    std::optional<AcquireResult> busy;   // a busy node's reply (holder's TTL and info)
    std::vector<long long> holder_pttl;  // per node: a busy reply's bound on the wait, else -1
    // Per node: its acquire answered (the script ran there, after `started`: a waiter's wake-up
    // list there was empty then; QuorumTarget counts a hand-off's lease from it).
    std::vector<char> reached;
    // A waiter's failed attempt: the nodes whose step back (abandon.lua, which empties the
    // wake-up list too) answered, each sent no earlier than `stepped_back_from`.
    std::vector<char> stepped_back;
    Deadline stepped_back_from{};
    std::optional<NodeError> first_error;  // the first node that did not answer, if any
    // The longest round trip (its give-back's) of a node that answered, but later than the node
    // timeout allowed: it is far away, not down.
    std::optional<Millis> late_round_trip;
    std::string why;  // when not acquired after a majority accepted: what went wrong
    // --once-per: the slot (the median of the accepting nodes' clocks' slots), and when a node
    // found the slot's run already done, its record: then the attempt is given up everywhere.
    std::optional<long long> slot;
    std::optional<SlotRecord> slot_done;
    // Nodes that lost the lock's data less than the restart guard ago and so voted busy (a free
    // lock held back, or a --once-per slot that may have run before the loss), and the reply of
    // the one held back longest (AcquireResult::restart_uptime_s), for the message.
    std::size_t held_back = 0;
    std::optional<AcquireResult> held_back_longest;
};

// What a wake-up wait saw on each node (QuorumLock::await_wake); nothing for a node whose wait
// was cut short or never started.
struct QuorumWake {
    std::vector<std::optional<long long>> handed;   // a hand-off's fence (lib/take.lua)
    std::vector<std::optional<Deadline>> empty_at;  // when a wait that timed out was sent
    std::vector<char> woken;                        // a plain wake-up (or a wait cut short)
};

struct QuorumRelease {
    std::size_t released = 0, absent = 0, not_owner = 0, failed = 0;
    std::optional<NodeError> first_error;
    // finish(): each answering node's record step (nodes that failed have none).
    std::vector<RecordResult> recorded;
};

// QuorumLock::follow: a node timeout not given is raised to this many times a measured round
// trip.
inline constexpr int follow_factor = 3;

class QuorumLock {
  public:
    // Each node gets its own connection, bounded by `per_node` (connect and each command).
    // --min-replicas (`replicas`) is counted per node: a node whose WAIT falls short after an
    // acquire or a renewal does not count towards the majority. `permits` > 1 (--permits N): a
    // holder holds one permit, the same one on a majority (QuorumLock::acquire says why).
    // `shared` (--shared): a shared holder, one on a majority (per node, shared and exclusive
    // holders exclude each other, and any two majorities share a node).
    // `give_back` bounds the give-backs of a failed attempt (at least `per_node`; quorum.cpp
    // says why they are not bounded by it alone).
    QuorumLock(const std::vector<Endpoint>& endpoints, Timeouts per_node, ReplicaPolicy replicas,
               int permits = 1, bool shared = false,
               std::optional<Timeouts> give_back = std::nullopt);
    // The same over nodes built elsewhere (the unit tests' fakes), each with its worker, as the
    // real ones. `per_node` bounds the rounds as above.
    QuorumLock(std::vector<std::unique_ptr<QuorumNode>> nodes, Timeouts per_node,
               ReplicaPolicy replicas, int permits = 1, bool shared = false,
               std::optional<Timeouts> give_back = std::nullopt);

    // One Redlock attempt: acquire everywhere, then raise the fence on the nodes that accepted.
    // A failed attempt releases on every node, so it leaves nothing behind that blocks others.
    // A waiter passes its `ticket` (> 0): a busy node queues it at that place, and a failed
    // attempt gives the nodes it took back while keeping that place (the comment in quorum.cpp
    // says why this orders waiters across the quorum and cannot deadlock).
    QuorumAttempt acquire(const LockKeys& keys, const std::string& token, Millis ttl,
                          const HolderInfo* info, long long ticket = 0);
    // Blocks until a majority of nodes has woken `token` (a release handed the lock on) or let
    // its block run out (each node's bound is `attempt`'s holder_pttl there: a holder that died
    // is taken over when its key expires), until `until`, or until `interrupt` is readable (a
    // signal). The nodes still blocked are then cut short; a frozen node is not waited for.
    // Says what each node's wait saw. `grace`: how long after `until` the answers are still
    // waited for (the waits themselves end at `until`: a wait that times out says so).
    QuorumWake await_wake(const LockKeys& keys, const std::string& token,
                          const QuorumAttempt& attempt, Deadline until, int interrupt,
                          Millis grace = Millis(0));
    // A waiter's claim window (issue 35): its queued acquires ask each node's release to hand it
    // the lock for that long (lib/take.lua); nullopt (the default): only woken. Never for
    // --once-per, --min-replicas, permits or shared (hand_off_claim() says nullopt then).
    void set_hand_off(std::optional<Millis> claim) { hand_off_ = claim; }
    std::optional<Millis> hand_off_claim() const {
        return once_ || replicas_.enabled() || permits_ > 1 || shared_ ? std::nullopt : hand_off_;
    }
    // A hand-off's fence step (QuorumTarget): raise_fences for the nodes that handed the lock
    // over (`handed`), as an acquire's fence step; on how many it was raised.
    std::size_t raise_handed(const LockKeys& keys, const std::string& token, long long fence,
                             const std::vector<char>& handed, long long ticket, Deadline give_up) {
        return raise_fences(keys, token, fence, handed, ticket, 1, give_up);
    }
    // A waiter that stops waiting: leaves the queue on every node, deletes a lock of ours that
    // an unanswered acquire may have taken, and passes a wake-up it may have had on to the next.
    void leave(const LockKeys& keys, const std::string& token);
    // Releases (or, with keep > 0, shortens) on every node at once.
    QuorumRelease release(const LockKeys& keys, const std::string& token, Millis keep);
    // The same, recording the run in the same step on each node (LockNode::finish).
    QuorumRelease finish(const LockKeys& keys, const std::string& token, Millis keep,
                         const RunRecord& record);
    // --once-per for every later acquire (LockNode::set_once_per, with each node's acquire).
    void set_once_per(const std::optional<OncePer>& once) { once_ = once; }
    // LockNode::set_busy_holder for every later acquire, with each node's acquire.
    void set_busy_holder(bool wanted) { busy_holder_ = wanted; }
    // LockNode::set_restart_guard for every later acquire, with each node's acquire.
    void set_restart_guard(std::optional<Millis> guard) { restart_guard_ = guard; }
    // With the node timeout not given (ConnectionOptions::node_timeout_given false): after an
    // attempt in which a node answered only after it (QuorumAttempt::late_round_trip), raises
    // it for the rest of the run to follow_factor times that round trip, at most a tenth of
    // `ttl`. Returns whether it raised it (then the attempt is worth repeating at once).
    void set_follow_round_trip(bool wanted) { follow_round_trip_ = wanted; }
    bool follow(Millis round_trip, Millis ttl);

    RenewResult renew(const LockKeys& keys, const std::string& token, Millis ttl,
                      Deadline deadline);
    Deadline lease_end(Deadline sent, Millis ttl) const;
    void set_cancel_fd(int fd);
    // A renewal's round trip, and the WAIT after it when --min-replicas asks for one.
    Millis renew_timeout() const {
        return timeouts_.command + (replicas_.enabled() ? replicas_.timeout : Millis(0));
    }
    // Whether `token` holds the lock on a majority right now.
    bool holds(const LockKeys& keys, const std::string& token);

    ~QuorumLock();
    QuorumLock(const QuorumLock&) = delete;
    QuorumLock& operator=(const QuorumLock&) = delete;

    std::size_t size() const { return workers_.size(); }
    std::size_t majority() const;
    // Node i's connection: only for fn of in_parallel, on that node's worker.
    Connection& connection(std::size_t i);
    std::string describe(std::size_t i) const;

    // Writes `record` (the run ledger, lock/ledger.hpp) on every node at once and returns each
    // node's result once every node not still busy with an earlier command answered: a node
    // frozen since the acquire is not waited for (its write is sent when it answers, or given
    // up), every other one is, so that the release after it reaches every live node. Null where
    // a node failed or had not answered.
    std::vector<std::optional<RecordResult>> record_run(const LockKeys& keys,
                                                        const std::string& token,
                                                        const RunRecord& record);

    // Runs fn(i) for every node at once, each on its node's worker thread, and returns when all
    // are done (a node busy with an earlier command too: fn may refer to the caller's locals). fn
    // must not throw. For the operator commands, which report every node, and for the once-per
    // slot and the ledger.
    void in_parallel(const std::function<void(std::size_t)>& fn);

    // One operation on every node at once, deciding as soon as the answers so far decide it.
    // The hot ones (the acquire, the fence step, the finish) go out in steps from the calling
    // thread, every node's in one poll() (QuorumNode::start_acquire and the others), where the
    // node is idle and has them; every other operation goes to the node's worker thread, which
    // runs them in order and is started only when the first one comes (quorum.cpp). A node that
    // has not answered when the outcome is known goes on in the background (what it was sent is
    // done, or given up when its turn comes after `give_up`), and its answer is not waited for.
    struct Worker;

  private:
    // The steps of acquire() after the acquire round (quorum.cpp).
    std::size_t raise_fences(const LockKeys& keys, const std::string& token, long long fence,
                             const std::vector<char>& accepted, long long ticket, int permit,
                             Deadline give_up);
    void give_back_attempt(const LockKeys& keys, const std::string& token, long long ticket,
                           Millis ttl, const std::vector<char>& wide,
                           const std::vector<char>& answered, QuorumAttempt& a);
    // A waiter's failed attempt: gives back every node it may have taken, staying queued there
    // at `ticket` (abandon.lua).
    // Returns each node's time to answer, as give_back() does.
    std::vector<std::optional<Millis>> step_back(const LockKeys& keys, const std::string& token,
                                                 long long ticket, Millis ttl,
                                                 const std::vector<char>& wide);
    // `op` on every node, waited for, under the give_back_ bounds on the nodes `wide` names and
    // the node timeouts on the others; each node's time to answer.
    std::vector<std::optional<Millis>> give_back(const std::function<void(QuorumNode&)>& op,
                                                 const std::vector<char>& wide);

    std::vector<std::shared_ptr<Worker>> workers_;
    bool follow_round_trip_ = false;
    Timeouts timeouts_;
    Timeouts give_back_;
    ReplicaPolicy replicas_;
    int permits_ = 1;
    bool shared_ = false;
    std::atomic<int> cancel_fd_{-1};
    std::optional<OncePer> once_;
    bool busy_holder_ = true;
    // Permits: the permit the next attempt asks every node for, after an attempt whose nodes
    // gave different permits (0: none; QuorumLock::acquire).
    int wanted_permit_ = 0;
    std::optional<Millis> restart_guard_;
    std::optional<Millis> hand_off_;
};

// Each quorum node's bounds: --node-timeout for the connect and for every command, far below
// the ttl, so that a dead or stalled node costs an attempt little of the lock's validity.
Timeouts quorum_timeouts(const ConnectionOptions& options);

// Runs `op` and turns any exception into a NodeError; what every node's operation goes through.
std::optional<NodeError> node_failure(const std::function<void()>& op);

// "127.0.0.1:7001/0,127.0.0.1:7002/0,...": REDLOCK_REDIS for a quorum run.
std::string quorum_identity(const std::vector<Endpoint>& endpoints);

}  // namespace redlock

// One node of a quorum as QuorumLock sees it: the per-node steps its majority logic counts (an
// acquire attempt, a renewal, a release, the fence step, a wake-up wait, leaving, a record). The
// product's node is LockNode over its own Connection (RedisQuorumNode); unit tests plug in fake
// nodes that freeze, lag, restart empty or lie, to prove the counting without a server.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "lock/ledger/ledger.hpp"
#include "lock/node/holder_info.hpp"
#include "lock/node/keys.hpp"
#include "lock/node/lock.hpp"
#include "lock/node/replicas.hpp"
#include "redis/connection.hpp"
#include "util/clock.hpp"

namespace redlock {

// What every acquire of one attempt sends along (QuorumLock's settings at the time).
struct NodeAcquire {
    long long ticket = 0;  // > 0: a waiter, queued at that place when busy
    std::optional<OncePer> once;
    bool busy_holder = true;
    int wanted_permit = 0;
    std::optional<Millis> restart_guard;
    ReplicaPolicy replicas;  // --min-replicas: a node whose WAIT falls short throws
    // A waiter's claim window when it accepts a release's hand-off on this node (lib/take.lua;
    // QuorumLock::hand_off_claim); nullopt: it is only woken.
    std::optional<Millis> hand_off_claim;
    // A plain acquire's fence floor (NodeSettings::fence_floor): the same on every node, so that
    // the nodes draw one fence alike (QuorumLock::acquire).
    std::optional<long long> fence_floor;
};

// What one node's wake-up wait saw (QuorumNode::await_wake).
struct NodeWake {
    bool timed_out = false;           // nothing came for the whole block: the list was empty
    std::optional<long long> handed;  // 'handoff:<fence>': a release took the lock for us here
};

// A node's operation sent without waiting for its answer (QuorumNode::start_acquire and the
// others): QuorumLock's rounds drive every node's from the calling thread in one poll(), so that
// a run creates no thread for its nodes (a thread per node made a quorum of 3 cost 1.4 times
// what one node costs, bench/quorum). Used by one thread at a time, as its node is.
template <class T>
class NodeCall {
  public:
    virtual ~NodeCall() = default;
    // What step() waits for: a descriptor and its poll events, and when the node has taken too
    // long (step() then throws the timeout).
    virtual Connection::Waiting waiting() const = 0;
    // Goes on as far as it can without blocking: the answer, once there is one. Throws what the
    // synchronous method throws.
    virtual std::optional<T> step() = 0;
    // Whether the rest must block (a fallback that is a synchronous command): then finish().
    virtual bool blocks() const { return false; }
    // Whether everything the call sends went out and its answer cannot ask for more: the node
    // has all of it, whenever the answer is read.
    virtual bool sent_all() const { return true; }
    // The rest, blocking until the answer: on the node's worker, where the round handed it.
    virtual T finish() = 0;
    // A cancel: drops the command in flight with its connection (it may have run, as after any
    // connection cut short).
    virtual void abort() = 0;
};

// Each method runs on one thread at a time: the node's own worker thread (QuorumLock::Worker), or
// the thread of a round that drives the node's NodeCall while the worker is idle. Each throws what
// a failed command throws (ReplyLost when a command was sent and its reply lost).
class QuorumNode {
  public:
    virtual ~QuorumNode() = default;

    // "host:port", for messages.
    virtual std::string describe() const = 0;
    // The descriptor that cuts the next commands short (-1: none).
    virtual void set_cancel_fd(int fd) = 0;
    // The bounds of each connect and command; a give-back widens them for a while.
    virtual Timeouts timeouts() const = 0;
    virtual void set_timeouts(Timeouts timeouts) = 0;
    virtual void ensure_connected() = 0;

    // One node's acquire (LockNode::acquire), confirmed on its replicas when `how` asks.
    virtual AcquireResult acquire(const LockKeys& keys, const std::string& token, Millis ttl,
                                  const HolderInfo* info, const NodeAcquire& how) = 0;
    // Raises the node's fence counter to `fence` if `token` holds the lock here (its permit
    // `permit`, or its shared hold): whether it did (raise_fence.lua).
    virtual bool raise_fence(const LockKeys& keys, const std::string& token, long long fence,
                             int permit) = 0;
    virtual RenewResult renew(const LockKeys& keys, const std::string& token, Millis ttl,
                              Deadline deadline, const ReplicaPolicy& replicas) = 0;
    virtual ReleaseResult release(const LockKeys& keys, const std::string& token, Millis keep) = 0;
    virtual FinishResult finish(const LockKeys& keys, const std::string& token, Millis keep,
                                const RunRecord& record) = 0;
    // As LockNode's: the quorum's waiters and permits steps.
    virtual void step_back(const LockKeys& keys, const std::string& token, long long ticket,
                           Millis alive) = 0;
    virtual void leave_queue(const LockKeys& keys, const std::string& token) = 0;
    virtual void settle_permit(const LockKeys& keys, const std::string& token, int permit) = 0;
    virtual bool abandon(const LockKeys& keys, const std::string& token) = 0;
    // Blocks until `token` is woken here (a release handed the lock on), `block` passed, or the
    // cancel descriptor is readable; says whether it timed out and what a hand-off's fence was
    // (a plain wake-up or a cut-short wait says neither: the next attempt decides).
    virtual NodeWake await_wake(const LockKeys& keys, const std::string& token, Millis block) = 0;
    // The run ledger's record (write_record).
    virtual RecordResult record(const LockKeys& keys, const std::string& token,
                                const RunRecord& record) = 0;
    // Whether `token` holds the lock here: its key, one of its permits or a shared hold.
    virtual bool holds(const LockKeys& keys, const std::string& token) = 0;

    // The split-phase forms (NodeCall) of acquire, raise_fence and finish, where the node has
    // them: the product's node on one server at an IP literal or a unix socket, in the plain mode,
    // without --min-replicas (Connection::sends_in_steps, LockNode::acquire_call). nullptr: the
    // quorum runs the synchronous method on the node's worker thread instead.
    virtual std::unique_ptr<NodeCall<AcquireResult>> start_acquire(const LockKeys&,
                                                                   const std::string&, Millis,
                                                                   const HolderInfo*,
                                                                   const NodeAcquire&) {
        return nullptr;
    }
    virtual std::unique_ptr<NodeCall<bool>> start_raise_fence(const LockKeys&, const std::string&,
                                                              long long, int) {
        return nullptr;
    }
    virtual std::unique_ptr<NodeCall<FinishResult>> start_finish(const LockKeys&,
                                                                 const std::string&, Millis,
                                                                 const RunRecord&) {
        return nullptr;
    }

    // The node's connection, for the operator commands (QuorumLock::in_parallel); a node without
    // one (a test's fake) throws.
    virtual Connection& connection() = 0;
};

// The product's node: LockNode over a connection of its own to `endpoint`.
std::unique_ptr<QuorumNode> make_redis_node(const Endpoint& endpoint, Timeouts timeouts,
                                            int permits, bool shared);

}  // namespace redlock

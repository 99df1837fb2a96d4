#include "lock/quorum_wait.hpp"

#include <fmt/format.h>
#include <poll.h>

#include <chrono>

#include "lock/quorum/quorum_math.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {
namespace {

// The waiter's place in every node's queue: when it began waiting, in microseconds of this
// host's clock, which is what orders waiters on different hosts (QuorumLock::acquire). Taken
// once per wait, so that a waiter keeps its place however often it looks again.
long long wait_ticket() {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace

QuorumTarget::QuorumTarget(QuorumLock& lock, const LockKeys& keys, const std::string& token,
                           Millis ttl, const HolderInfo* info, bool waiting, int permits,
                           bool shared)
    : lock_(lock),
      keys_(keys),
      token_(token),
      ttl_(ttl),
      info_(info),
      ticket_(waiting ? wait_ticket() : 0),
      permits_(permits),
      shared_(shared) {}

// One Redlock attempt. When too few nodes answered to decide anything, the lock is not known
// to be busy: thrown as the loop's outage (RedisUnavailable), or, when the nodes failed in a more
// specific way (a refused password), as that, which no wait rides out.
AcquireAttempt QuorumTarget::attempt(Queueing, bool& reached) {
    // A failed attempt without a ticket gave back everything it took on every node; a
    // waiter's kept its place in the queues, which leaving must undo.
    reached = reached || ticket_ > 0;
    for (;;) {
        last_ = lock_.acquire(keys_, token_, ttl_, info_, ticket_);
        // Nodes farther away than the default node timeout: at once again, with one that
        // follows their round trip (QuorumLock::follow says why that is safe).
        if (last_.acquired || !last_.late_round_trip || !lock_.follow(*last_.late_round_trip, ttl_))
            break;
    }
    // (A node that found the --once-per slot's run done ends the wait however many answered:
    // the attempt gave back whatever it took.)
    if (!last_.acquired && !last_.slot_done && last_.answered < majority(last_.nodes))
        throw_unreachable();
    AcquireAttempt out;
    out.sent = last_.started;  // the validity counts from when the attempt began
    if (!last_.acquired) {
        // What the status line and the loop's bounds read: a node's busy reply, else the
        // restart guard's longest hold-back, else (votes split, no node named a holder) a
        // lock without a holder or a TTL.
        AcquireResult between;
        between.holder_pttl = -2;
        out.result = last_.busy ? *last_.busy : last_.held_back_longest.value_or(between);
    }
    out.result.acquired = last_.acquired;
    out.result.fence = last_.fence;
    out.result.slot_done = last_.slot_done;
    // A split is not a busy lock: the nodes had permits free, so even a run that does not
    // wait tries a few more times (asking for the permit most nodes had free) before it
    // says the permits are taken; short, jittered pauses, so that two runs that split each
    // other do not meet again in step.
    if (last_.split && (ticket_ > 0 || ++splits_ < split_attempts)) {
        out.again_after = split_.next();
        log::verbose("lock '{}': the nodes gave this run different permits; trying again in {}",
                     keys_.key, format_duration(*out.again_after));
    } else if (!last_.split) {
        split_.reset();
    }
    return out;
}

WaitTarget::Blocked QuorumTarget::block(Millis block, int cancel_fd) {
    lock_.await_wake(keys_, token_, last_, BootClock::now() + block, cancel_fd);
    pollfd p{cancel_fd, POLLIN, 0};
    return cancel_fd >= 0 && ::poll(&p, 1, 0) > 0 ? Blocked::cancelled : Blocked::woken;
}

std::string QuorumTarget::busy_detail() const {
    return fmt::format("({} of {} nodes accepted, {} answered)", last_.accepted, last_.nodes,
                       last_.answered);
}

void QuorumTarget::throw_unreachable() const {
    const QuorumAttempt& a = last_;
    std::string first = a.first_error ? a.first_error->message : std::string("no reply");
    int code = a.first_error ? a.first_error->code : exit_code::unavailable;
    std::string message = fmt::format(
        "cannot take lock '{}': only {} of {} Redis nodes answered ({} needed for a "
        "majority); first error: {}",
        keys_.key, a.answered, a.nodes, majority(a.nodes), first);
    // A usage or auth problem on a node says more than "unavailable"; a plain internal error
    // (an unexpected reply) does not.
    if (code == exit_code::internal || code == exit_code::unavailable)
        throw RedisUnavailable(message);
    throw Error(message, code);
}

}  // namespace redlock

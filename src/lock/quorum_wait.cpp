#include "lock/quorum_wait.hpp"

#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
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
    // A node whose acquire answered ran it after `started`, and a busy acquire empties our
    // wake-up list there (acquire.lua): what is found there later was pushed after that. The step
    // back of a failed attempt (abandon.lua), which may come long after when it waits for a
    // frozen node, empties it again.
    empty_since_.resize(last_.reached.size());
    for (std::size_t i = 0; i < last_.reached.size(); ++i) {
        if (last_.reached[i]) empty_since_[i] = last_.started;
        if (i < last_.stepped_back.size() && last_.stepped_back[i])
            empty_since_[i] = last_.stepped_back_from;
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

// A waiter that accepts a hand-off blocks in slices of a quarter of its claim window: a slice
// whose waits all timed out moves each node's last empty look (empty_since_) and blocks again,
// without an attempt, so that a hand-off that comes after a long wait in the queue is still
// recent enough to start on (take_hand_off). Any other outcome, or the end of `block`, ends it.
WaitTarget::Blocked QuorumTarget::block(Millis block, int cancel_fd) {
    const Millis claim = claim_window();
    const Deadline end = BootClock::now() + block;
    for (;;) {
        Deadline until = end;
        if (claim > Millis(0))
            until = std::min(end, BootClock::now() + std::max(claim / 4, Millis(1)));
        // (A slice's waits that time out are waited for: they move the last empty look.)
        QuorumWake wake = lock_.await_wake(keys_, token_, last_, until, cancel_fd,
                                           claim > Millis(0) ? lock_.renew_timeout() : Millis(0));
        empty_since_.resize(wake.empty_at.size());
        for (std::size_t i = 0; i < wake.empty_at.size(); ++i)
            if (wake.empty_at[i]) empty_since_[i] = wake.empty_at[i];
        pollfd p{cancel_fd, POLLIN, 0};
        if (cancel_fd >= 0 && ::poll(&p, 1, 0) > 0) return Blocked::cancelled;
        if (claim == Millis(0)) return Blocked::woken;
        if (take_hand_off(wake)) return Blocked::handed;
        const bool quiet =
            std::none_of(wake.handed.begin(), wake.handed.end(), [](const auto& h) { return h; }) &&
            std::none_of(wake.woken.begin(), wake.woken.end(), [](char w) { return w; });
        if (!quiet || BootClock::now() >= end) return Blocked::woken;
    }
}

// The hand-off over a quorum (issue 35). On each node the release of the holder took the lock
// for this waiter, the head of that node's queue (hand_off_head, lib/take.lua), for the claim
// window C, with that node's next fence h_i (fence_from: one above its counter and the
// holder's fence). The waiter starts on a majority M of such nodes without another acquire
// round when this is safe; otherwise it returns "woken" and the loop's next attempt decides (it
// finds its own token where the lock was handed over, and is refused where it was not).
// - Mutual exclusion: the key holds our token on every node of M until C after that node's
//   hand-off. That ran after the send time L_i of our last command there whose reply showed our
//   wake-up list empty (empty_since_: what is on the list now was pushed after it; a node
//   without one, or a plain wake-up, does not count). So M holds the lock for us until
//   L + C by its clocks, L = min over M of L_i, and the lease is counted as an acquire's
//   (QuorumLock::lease_end, the drift allowance), from L for C; the waiter starts only while
//   more than half of it is left (the loop checks again, waiter.cpp), as one node's waiter does.
//   Within that half no claim of M can have lapsed, so each h_i is the one fresh hand-off
//   there, not one left from an earlier turn whose key went on to someone else. A waiter
//   paused past it confirms with an acquire: it never runs beside a later holder, and a head
//   that died holds each node for C at most (the next waiter is told to look again).
// - Fences: the fence is N = max over M of h_i. It is above the last holder's fence F: that
//   holder raised its fence on a majority, which shares a node j with M, and j's hand-off came
//   after that raise (before it, our fresh key on j would have kept that holder off j), so
//   h_j > counter_j >= F. Every later holder needs a majority, which shares a node with M, and
//   draws its fence above that node's counter: so that node must hold at least N. When every
//   h_i of M is equal, each node of M holds N already and the waiter starts at once. When they
//   differ (a node's counter had moved on: a minority taken in a failed attempt, a restart, a
//   node that lies), N is raised on M first (raise_fence.lua, token-checked, as an acquire's
//   fence step), and the waiter starts only when a majority raised it in time: a fence far above
//   the others is never taken without that step, and never repeated by a later holder.
// - FIFO: each node hands the lock to the live head of its queue, ordered by ticket on every
//   node (QuorumLock::acquire), so a majority hands it to the waiter with the lowest ticket
//   queued on a majority, the one an acquire round would have let in.
// - Nodes outside M (frozen, or reached by the release late) need nothing: the lock is held on
//   a majority without them, a late hand-off there is renewed and released with the rest, and
//   our queue entry there is removed by our release or expires with its ':alive' mark.
bool QuorumTarget::take_hand_off(const QuorumWake& wake) {
    const std::size_t n = wake.handed.size(), need = majority(n);
    const Millis claim = claim_window();
    std::vector<char> handed(n, 0);
    std::size_t count = 0;
    long long fence = 0;
    bool equal = true;
    Deadline since = Deadline::max();
    for (std::size_t i = 0; i < n; ++i) {
        if (!wake.handed[i] || i >= empty_since_.size() || !empty_since_[i]) continue;
        handed[i] = 1;
        if (count++ > 0 && *wake.handed[i] != fence) equal = false;
        fence = std::max(fence, *wake.handed[i]);
        since = std::min(since, *empty_since_[i]);
    }
    if (count == 0) return false;
    const Deadline lease_end = lock_.lease_end(since, claim);
    auto in_time = [&] { return BootClock::now() + claim / 2 < lease_end; };
    if (count < need) {
        log::verbose("lock '{}' was handed over on {} of {} nodes ({} needed); confirming it",
                     keys_.key, count, n, need);
        return false;
    }
    if (!in_time()) {
        log::verbose("lock '{}' was handed over too long after the wait's last look; confirming it",
                     keys_.key);
        return false;
    }
    if (!equal) {
        std::size_t raised = lock_.raise_handed(keys_, token_, fence, handed, ticket_, lease_end);
        if (raised < need || !in_time()) {
            log::verbose(
                "lock '{}' was handed over with fences that differ, and raising them reached {} "
                "of {} nodes in time; confirming it",
                keys_.key, raised, n);
            return false;
        }
    }
    last_.acquired = true;
    last_.fence = fence;
    last_.accepted = count;
    last_.started = since;
    return true;
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

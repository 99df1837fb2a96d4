#include "lock/waiter.hpp"

#include <fmt/format.h>
#include <poll.h>

#include <algorithm>

#include "lock/backend.hpp"
#include "lock/node/acquire_retry.hpp"
#include "lock/node/lock_replies.hpp"
#include "lock/node/scripts.hpp"
#include "redis/socket.hpp"
#include "util/backoff.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"
#include "util/number.hpp"

namespace redlock {
namespace {

const WaitProgressFn no_progress;

// The product's target: the lock's node on its connection, BLPOP on the wake-up list.
class NodeTarget final : public WaitTarget {
  public:
    NodeTarget(LockNode& node, const LockKeys& keys, const std::string& token, Millis ttl,
               const HolderInfo* info)
        : node_(node), keys_(keys), token_(token), ttl_(ttl), info_(info) {}

    AcquireAttempt attempt(Queueing queueing, bool& reached) override {
        return acquire_resolving(node_, keys_, token_, ttl_, info_, queueing, reached);
    }
    void follow_master() override {
        Connection& conn = node_.connection();
        conn.follow_master(BootClock::now() + conn.timeouts().connect);
    }
    Blocked block(Millis block, int cancel_fd) override {
        Connection& conn = node_.connection();
        // Cleared however the BLPOP ends: a later command must not be cancelled by a signal.
        struct ClearCancel {
            Connection& conn;
            ~ClearCancel() { conn.set_cancel_fd(-1); }
        } clear{conn};
        conn.set_cancel_fd(cancel_fd);
        try {
            // The socket's deadline is the connection's own, on the boot clock: the server
            // answers a BLPOP at its timeout, and a command timeout beyond it covers the trip.
            Reply r = conn.command(
                {"BLPOP", keys_.wake_key(token_), fmt::format("{:.3f}", block.count() / 1000.0)},
                BootClock::now() + block + conn.timeouts().command);
            ReplyView reply = check(r, fmt::format("waiting for lock '{}'", keys_.key));
            if (reply.is_nil()) return Blocked::timed_out;
            // A hand-off (parse_hand_off); anything else ('1', a payload of another version or
            // out of range) is a plain wake-up, which the next acquire follows up as before.
            std::optional<std::string_view> pushed =
                reply.size() == 2 ? reply[1].string() : std::nullopt;
            if (node_.hand_off_claim() && pushed) {
                if (auto handed = parse_hand_off(*pushed, node_.permits())) {
                    handed_fence_ = handed->fence;
                    handed_permit_ = handed->permit;
                    node_.handed_over(handed->permit);
                    return Blocked::handed;
                }
            }
            return Blocked::woken;
        } catch (const Cancelled&) {
            return Blocked::cancelled;
        }
    }
    WaitStatus status() override {
        Connection& conn = node_.connection();
        return wait_status_result(
            scripts::wait_status().run(conn, {keys_.key, keys_.info, keys_.wait}, {token_},
                                       conn.timeouts().command),
            keys_.key);
    }
    bool key_exists() override {
        Connection& conn = node_.connection();
        Reply r = conn.command({"EXISTS", keys_.key}, BootClock::now() + conn.timeouts().command);
        return check(r, fmt::format("looking at lock '{}'", keys_.key)).as_int(0, 1, [&] {
            return fmt::format("unexpected reply to EXISTS for lock '{}' (is this Redis?)",
                               keys_.key);
        }) == 1;
    }
    bool abandon() override {
        // First on the connection that lost the acquire's reply, so that it runs after that
        // acquire (Connection::after_timeout); if that one has stalled, once on a fresh one.
        try {
            return node_.abandon(keys_, token_);
        } catch (const ReplyLost&) {
            return node_.abandon(keys_, token_);
        }
    }
    void release() override { node_.release(keys_, token_); }
    int permits() const override { return node_.permits(); }
    bool shared() const override { return node_.shared(); }
    Millis claim_window() const override { return node_.hand_off_claim().value_or(Millis(0)); }
    long long handed_fence() const override { return handed_fence_; }
    int handed_permit() const override { return handed_permit_; }

  private:
    LockNode& node_;
    const LockKeys& keys_;
    const std::string& token_;
    Millis ttl_;
    const HolderInfo* info_;
    long long handed_fence_ = 0;
    int handed_permit_ = 1;
};

using Blocked = WaitTarget::Blocked;

}  // namespace

std::optional<HandOff> parse_hand_off(std::string_view payload, int permits) {
    constexpr std::string_view prefix = "handoff:";
    if (!payload.starts_with(prefix)) return std::nullopt;
    payload.remove_prefix(prefix.size());
    HandOff handed;
    // A permits lock's wake-up names the permit too (permits.lua); a plain one does not. Either
    // out of shape, or a number out of range, is no hand-off this waiter can start on.
    std::string_view fence = payload;
    if (permits > 1) {
        std::size_t colon = payload.find(':');
        if (colon == std::string_view::npos) return std::nullopt;
        fence = payload.substr(0, colon);
        std::optional<long long> permit = parse_integer(payload.substr(colon + 1), 1, permits);
        if (!permit) return std::nullopt;
        handed.permit = static_cast<int>(*permit);
    }
    std::optional<long long> value = parse_integer(fence, 1, fence_limit - 1);
    if (!value) return std::nullopt;
    handed.fence = *value;
    return handed;
}

namespace {

// Best effort: a waiter whose entry stays behind is only skipped over later, by timeouts, and a
// lock an unanswered acquire took expires by its TTL.
// `quiet`: the run is already ending on a Redis error, whose one line says enough; a failed
// clean-up for the same reason would only repeat it.
void abandon(WaitTarget& target, const LockKeys& keys, Millis ttl, bool quiet = false) {
    try {
        if (target.abandon())
            log::warning("lock '{}' had been taken by an acquire whose reply was lost; released it",
                         keys.key);
    } catch (const std::exception& e) {
        std::string message = fmt::format(
            "could not give up lock '{}' cleanly ({}); if an unanswered acquire took it, it "
            "expires by itself within {}",
            keys.key, e.what(), format_duration(ttl));
        if (quiet)
            log::verbose("{}", message);
        else
            log::warning("{}", message);
    }
}

// Sleeps for `delay`, cut short by a signal (the top of the wait loop decides what it means).
void pause(Clock& clock, Millis delay, SignalEvents& signals) {
    pollfd p{signals.fd(), POLLIN, 0};
    clock.poll(&p, 1, clock.now() + delay);
}

// One block on our wake-up list, for up to `block`: woken (a release handed us the lock), timed
// out, or interrupted (a signal, or a broken connection, after a pause).
// `empty_since`: moved to this block's send time when it times out, a reply that shows our
// wake-up list empty (a hand-off found later was pushed after it).
Blocked block_on_wake_list(WaitTarget& target, const LockKeys& keys, Millis block,
                           SignalEvents& signals, Backoff& outage, Clock& clock,
                           Deadline& empty_since) {
    try {
        Deadline sent = clock.now();
        Blocked outcome = target.block(block, signals.fd());
        if (outcome == Blocked::timed_out) empty_since = sent;
        // A signal arrived; the top of the loop decides whether it ends the wait.
        if (outcome != Blocked::cancelled) outage.reset();
        return outcome;
    } catch (const RedisUnavailable& e) {
        // (Other error replies to BLPOP are not transient and end the wait.)
        // The connection broke or timed out while blocked (a restart, CLIENT KILL, a network
        // blip), or a failover demoted the master under the BLPOP, which Redis ends with
        // UNBLOCKED: no reason to give up a wait. The next attempt reconnects (to the master
        // the sentinels or the slot map name now), keeps the place in the queue and looks
        // again; while Redis stays away, it retries until the wait ends.
        Millis delay = outage.next();
        log::verbose("waiting for lock '{}' was interrupted ({}); looking again in {}", keys.key,
                     e.what(), format_duration(delay));
        pause(clock, delay, signals);
        return Blocked::cancelled;
    }
}

// The same block as block_on_wake_list, watched: cut into slices of a second, with one small
// read-only script (wait_status.lua) between two, so that the status line shows the holder and
// our place as they are now. The slices end where the single block would have ended; a read
// starts only while a second of the block is left, so the block overruns by at most one read,
// which the ':alive' grace set at the attempt covers (LockNode::acquire). A read that fails is
// skipped: the line keeps what it had, and the next slice or attempt deals with the outage.
Blocked watch_blocked(WaitTarget& target, const LockKeys& keys, Millis block, SignalEvents& signals,
                      Backoff& outage, WaitView& view, Clock& clock, Deadline& empty_since) {
    if (!target.reads_status()) {
        // Nothing to read between slices: the line shows what the attempt found, moved on.
        view.show();
        return block_on_wake_list(target, keys, block, signals, outage, clock, empty_since);
    }
    Deadline end = clock.now() + block;
    for (;;) {
        view.show();
        Millis slice = std::min(wait_progress_every, std::chrono::ceil<Millis>(end - clock.now()));
        Blocked outcome = block_on_wake_list(target, keys, std::max(slice, Millis(1)), signals,
                                             outage, clock, empty_since);
        if (outcome != Blocked::timed_out) return outcome;
        if (end - clock.now() < wait_progress_every) return outcome;
        // A permits lock keeps its holders elsewhere (permits.hpp): the line shows only times.
        // Nor while the restart guard holds the lock back: the read would show a free lock.
        if (target.permits() > 1 || view.held_back()) continue;
        try {
            WaitStatus now = target.status();
            view.saw(now.busy, now.place);
        } catch (const Error&) {
        }
    }
}

// The number of rechecks after which foreign_recheck_after stays at its longest.
constexpr int foreign_recheck_longest = 5;

// Whether a busy reply without holder info came from a key (an application's lock) rather than a
// reservation for the queue's head. A look that fails counts as a key: the wait then looks again
// soon, which is what it does while Redis is away anyway.
bool foreign_key(WaitTarget& target) {
    try {
        return target.key_exists();
    } catch (const Error&) {
        return true;
    }
}

WaitResult wait_loop(WaitTarget& target, const LockKeys& keys, Millis ttl, Millis wait,
                     SignalEvents& signals, bool& reached, const WaitProgressFn& progress,
                     Clock& clock) {
    Deadline start = clock.now();
    Deadline give_up = wait == Millis::max() ? Deadline::max() : start + wait;
    WaitView view(wait > Millis(0) ? progress : no_progress, keys.key, start, give_up,
                  target.permits(), clock);
    const bool waiting = wait > Millis(0);
    // The first busy attempt joins the queue's end; later ones keep the place.
    const Queueing queueing = waiting ? Queueing::wait : Queueing::none;
    WaitResult result;
    // Between attempts while Redis is unreachable: a BLPOP whose connection broke, then acquires
    // refused while the server restarts or a failover completes.
    Backoff outage(Millis(50), Millis(1000));
    int foreign_rechecks = 0;  // looks in a row behind a holder whose release wakes nobody
    // A lock a release handed over (Blocked::handed), in time to start on, as an acquire's reply.
    std::optional<AcquireAttempt> handed;
    Deadline empty_since{};  // see block_on_wake_list
    bool announced = false;  // "lock is busy; waiting" logged
    for (int attempt = 1;; ++attempt) {
        // Checked before every attempt: a waiter told to stop must never take the lock.
        if ((result.interrupted_by = stopping_signal(signals))) {
            if (reached) abandon(target, keys, ttl);
            return result;
        }
        // Every retry goes to the master the sentinels name now, not the one this wait began on:
        // after a failover the old master stays writable for seconds (for ever, if it is cut off
        // from the sentinels), and a lock taken there is held beside the real holder's on the
        // new master. (A no-op for every other kind of endpoint.)
        // (Not after a hand-off: it came over the connection to the master that holds it.)
        if (attempt > 1 && !handed) target.follow_master();
        AcquireAttempt sent;
        try {
            if (handed) {
                sent = *handed;
                result.lease = target.claim_window();
                log::verbose("lock '{}' was handed over by its release", keys.key);
            } else {
                sent = target.attempt(queueing, reached);
                result.lease = Millis(0);
            }
            handed.reset();
        } catch (const RedisUnavailable& e) {
            // A restart, a failover, a network blip: the wait still has time, and a waiter rides
            // it out rather than fail a job that would have got the lock a little later. The
            // queue entry, if the server kept it, keeps our place (the acquire script finds our
            // token there); otherwise the next answered attempt queues us at the tail. A run
            // without --wait keeps failing at once (69). Errors outside this family (AUTH,
            // WRONGTYPE, TLS, an old server) are not transient and end the wait.
            if (!waiting) throw;
            Deadline now = clock.now();
            if (now >= give_up)
                throw RedisUnavailable(fmt::format(
                    "gave up waiting for lock '{}' after {}: Redis still unavailable ({})",
                    keys.key, format_duration(wait), e.what()));
            Millis delay = std::min(outage.next(), std::chrono::ceil<Millis>(give_up - now));
            log::verbose("waiting for lock '{}': Redis unavailable ({}); trying again in {}",
                         keys.key, e.what(), format_duration(delay));
            pause(clock, delay, signals);
            continue;
        }
        outage.reset();
        result.last = sent.result;
        result.lease_start = sent.sent;
        empty_since = sent.sent;  // a busy acquire empties the wake-up list (acquire.lua)
        if (result.last.acquired && (result.interrupted_by = stopping_signal(signals))) {
            // Told to stop while the acquire was in flight: give the lock straight back (which
            // wakes the next waiter) rather than start the command.
            try {
                target.release();
            } catch (const std::exception& e) {
                log::warning("could not hand back lock '{}' ({}); it expires by itself", keys.key,
                             e.what());
            }
            result.last.acquired = false;
            return result;
        }
        // --once-per: the slot's run is done. The script has taken us out of the queue and
        // handed the free lock on (a quorum's attempt gave back whatever it took); nothing of
        // ours is left to give up.
        if (result.last.slot_done) return result;
        if (result.last.acquired) {
            if (attempt > 1)
                log::verbose(
                    "waited {} ({} attempts) for lock '{}'",
                    format_duration(std::chrono::duration_cast<Millis>(clock.now() - start)),
                    attempt, keys.key);
            return result;
        }
        Deadline now = clock.now();
        // Inconclusive, not busy (a quorum's permits split): a short pause, then again, even
        // for a run that does not wait, as often as the target allows; a wait not past its end.
        if (sent.again_after && (!waiting || now < give_up)) {
            Millis delay = *sent.again_after;
            if (waiting) delay = std::min(delay, std::chrono::ceil<Millis>(give_up - now));
            pause(clock, delay, signals);  // (the target said why)
            continue;
        }
        if (now >= give_up) {
            if (waiting) abandon(target, keys, ttl);
            return result;
        }

        Millis block = std::chrono::ceil<Millis>(give_up - now);
        // Bounded by the holder's expiry (+1ms: wake just after it, not just before), so that a
        // holder that died without releasing is taken over; the place in the queue is kept.
        block = std::min(block, result.last.holder_pttl >= 0 ? Millis(result.last.holder_pttl + 1)
                                                             : no_ttl_recheck);
        // A redlock-run holder records its info beside the lock, and its release (or a forced
        // one) wakes the queue's head. A busy reply without that info (a waiter asks for it
        // whenever it waits: run.cpp) is either a lock reserved for the head (no key: the head's
        // hand-off comes, bounded by the reply's TTL, its presence mark) or an application's lock,
        // whose DEL wakes nobody: without a look now and then the wait would last its whole TTL.
        // (Permits and shared holders keep their info elsewhere, and always wake the queue.)
        if (!result.last.holder && target.permits() == 1 && !target.shared() &&
            foreign_key(target)) {
            block = std::min(block, foreign_recheck_after(foreign_rechecks++));
        } else {
            foreign_rechecks = 0;
            // The key may have gone between the attempt and the look: a reservation is waited
            // for no longer than the longest foreign recheck, so that such a race costs 2s at
            // most rather than the application's TTL.
            if (!result.last.holder && target.permits() == 1 && !target.shared())
                block = std::min(block, foreign_recheck_after(foreign_recheck_longest));
        }
        block = std::max(block, Millis(1));  // BLPOP's 0 would mean "forever"
        // The server chooses the holder's TTL; the socket deadline below must stay ours, so a
        // wait longer than a minute is a series of BLPOPs (each retry keeps our queue place).
        block = std::min(block, Millis(60'000));
        if (!announced) {
            std::string detail = target.busy_detail();
            log::verbose("lock '{}' is busy{}; waiting (up to {})", keys.key,
                         detail.empty() ? detail : " " + detail,
                         wait == Millis::max() ? std::string("forever") : format_duration(wait));
        }
        announced = true;
        view.saw(result.last);
        Blocked outcome =
            view.enabled()
                ? watch_blocked(target, keys, block, signals, outage, view, clock, empty_since)
                : block_on_wake_list(target, keys, block, signals, outage, clock, empty_since);
        // A release took the lock for us, for the claim window C from when it ran, which we do
        // not know: only that it ran after `empty_since`, the send time of our last command
        // whose reply showed the wake-up list empty (the busy acquire empties it; a block that
        // timed out found it empty). So the lease is [empty_since, empty_since + C), and the
        // next turn of the loop takes it as it would an acquire's reply, without sending one,
        // while at least half of C (less the drift margin) is left for the first renewal; a
        // wake-up that comes later (a long wait since that command, a waiter paused past its
        // turn) is confirmed by an acquire instead, which finds our token if the claim has not
        // lapsed and queues us again if someone took the lock meanwhile.
        if (outcome == Blocked::handed) {
            Millis claim = target.claim_window();
            const Deadline since = target.handed_since().value_or(empty_since);
            if (clock.now() + claim / 2 < since + claim - lease_margin(claim)) {
                handed.emplace();
                handed->result.acquired = true;
                handed->result.fence = target.handed_fence();
                handed->result.permit = target.handed_permit();
                handed->sent = since;
            } else {
                log::verbose(
                    "lock '{}' was handed over too long after the wait's last look; "
                    "confirming it",
                    keys.key);
            }
        }
    }
}

}  // namespace

Millis foreign_recheck_after(int rechecks) {
    constexpr Millis first{100}, cap{2'000};
    if (rechecks >= foreign_recheck_longest) return cap;  // 100ms << 5 is past the cap already
    return std::min(cap, first * (1 << std::max(rechecks, 0)));
}

WaitResult acquire_waiting(WaitTarget& target, const LockKeys& keys, Millis ttl, Millis wait,
                           SignalEvents& signals, const WaitProgressFn& progress, Clock& clock) {
    bool reached = false;  // an acquire may have reached Redis: we may be queued, or even hold it
    try {
        return wait_loop(target, keys, ttl, wait, signals, reached, progress, clock);
    } catch (...) {
        // Whatever ends the run now (Redis gone, an error reply, a lost reply twice), it must not
        // leave a lock of ours, or a place in the queue, behind.
        if (reached) abandon(target, keys, ttl, /*quiet=*/true);
        throw;
    }
}

WaitResult acquire_waiting(LockNode& node, const LockKeys& keys, const std::string& token,
                           Millis ttl, const HolderInfo* info, Millis wait, SignalEvents& signals,
                           const WaitProgressFn& progress, Clock& clock) {
    NodeTarget target(node, keys, token, ttl, info);
    return acquire_waiting(target, keys, ttl, wait, signals, progress, clock);
}

}  // namespace redlock

#include "lock/waiter.hpp"

#include <fmt/format.h>
#include <poll.h>

#include <algorithm>

#include "lock/acquire_retry.hpp"
#include "lock/lock_replies.hpp"
#include "lock/scripts.hpp"
#include "redis/socket.hpp"
#include "util/backoff.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {
namespace {

const WaitProgressFn no_progress;

// Best effort: a waiter whose entry stays behind is only skipped over later, by timeouts, and a
// lock an unanswered acquire took expires by its TTL.
// `quiet`: the run is already ending on a Redis error, whose one line says enough; a failed
// clean-up for the same reason would only repeat it.
void abandon(LockNode& node, const LockKeys& keys, const std::string& token, Millis ttl,
             bool quiet = false) {
    try {
        if (node.abandon(keys, token))
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
void pause(Millis delay, SignalEvents& signals) {
    pollfd p{signals.fd(), POLLIN, 0};
    ::poll(&p, 1, millis_until(BootClock::now() + delay));
}

enum class Blocked { woken, timed_out, interrupted };

// One BLPOP on our wake-up list, for up to `block`: woken (a release handed us the lock),
// timed out, or interrupted (a signal, or a broken connection, after a pause).
Blocked block_on_wake_list(Connection& conn, const LockKeys& keys, const std::string& token,
                           Millis block, SignalEvents& signals, Backoff& outage) {
    Blocked outcome = Blocked::interrupted;
    conn.set_cancel_fd(signals.fd());
    try {
        Reply r = conn.command(
            {"BLPOP", keys.wake_key(token), fmt::format("{:.3f}", block.count() / 1000.0)},
            BootClock::now() + block + conn.timeouts().command);
        const redisReply& reply = check(r, fmt::format("waiting for lock '{}'", keys.key));
        outage.reset();
        outcome = reply.type == REDIS_REPLY_NIL ? Blocked::timed_out : Blocked::woken;
    } catch (const Cancelled&) {
        // A signal arrived; the top of the loop decides whether it ends the wait.
    } catch (const RedisUnavailable& e) {
        // (Other error replies to BLPOP are not transient and end the wait below.)
        conn.set_cancel_fd(-1);
        // The connection broke or timed out while blocked (a restart, CLIENT KILL, a network
        // blip), or a failover demoted the master under the BLPOP, which Redis ends with
        // UNBLOCKED: no reason to give up a wait. The next attempt reconnects (to the master
        // the sentinels or the slot map name now), keeps the place in the queue and looks
        // again; while Redis stays away, it retries until the wait ends.
        Millis delay = outage.next();
        log::verbose("waiting for lock '{}' was interrupted ({}); looking again in {}", keys.key,
                     e.what(), format_duration(delay));
        pause(delay, signals);
    } catch (...) {
        conn.set_cancel_fd(-1);
        throw;
    }
    conn.set_cancel_fd(-1);
    return outcome;
}

// The same block as block_on_wake_list, watched: cut into slices of a second, with one small
// read-only script (wait_status.lua) between two, so that the status line shows the holder and
// our place as they are now. The slices end where the single block would have ended; a read
// starts only while a second of the block is left, so the block overruns by at most one read,
// which the ':alive' grace set at the attempt covers (LockNode::acquire). A read that fails is
// skipped: the line keeps what it had, and the next slice or attempt deals with the outage.
void watch_blocked(LockNode& node, const LockKeys& keys, const std::string& token, Millis block,
                   SignalEvents& signals, Backoff& outage, WaitView& view) {
    Connection& conn = node.connection();
    Deadline end = BootClock::now() + block;
    for (;;) {
        view.show();
        Millis slice =
            std::min(wait_progress_every, std::chrono::ceil<Millis>(end - BootClock::now()));
        if (block_on_wake_list(conn, keys, token, std::max(slice, Millis(1)), signals, outage) !=
            Blocked::timed_out)
            return;
        if (end - BootClock::now() < wait_progress_every) return;
        // A permits lock keeps its holders elsewhere (permits.hpp): the line shows only times.
        // Nor while the restart guard holds the lock back: the read would show a free lock.
        if (node.permits() > 1 || view.held_back()) continue;
        try {
            WaitStatus now = wait_status_result(
                scripts::wait_status().run(conn, {keys.key, keys.info, keys.wait}, {token},
                                           conn.timeouts().command),
                keys.key);
            view.saw(now.busy, now.place);
        } catch (const Error&) {
        }
    }
}

WaitResult wait_loop(LockNode& node, const LockKeys& keys, const std::string& token, Millis ttl,
                     const HolderInfo* info, Millis wait, SignalEvents& signals, bool& reached,
                     const WaitProgressFn& progress) {
    Deadline start = BootClock::now();
    Deadline give_up = wait == Millis::max() ? Deadline::max() : start + wait;
    WaitView view(wait > Millis(0) ? progress : no_progress, keys.key, start, give_up,
                  node.permits());
    Connection& conn = node.connection();
    const bool waiting = wait > Millis(0);
    // The first busy attempt joins the queue's end; later ones keep the place.
    const Queueing queueing = waiting ? Queueing::wait : Queueing::none;
    WaitResult result;
    // Between attempts while Redis is unreachable: a BLPOP whose connection broke, then acquires
    // refused while the server restarts or a failover completes.
    Backoff outage(Millis(50), Millis(1000));
    bool announced = false;  // "lock is busy; waiting" logged
    for (int attempt = 1;; ++attempt) {
        // Checked before every attempt: a waiter told to stop must never take the lock.
        if ((result.interrupted_by = stopping_signal(signals))) {
            if (reached) abandon(node, keys, token, ttl);
            return result;
        }
        // Every retry goes to the master the sentinels name now, not the one this wait began on:
        // after a failover the old master stays writable for seconds (for ever, if it is cut off
        // from the sentinels), and a lock taken there is held beside the real holder's on the
        // new master. (A no-op for every other kind of endpoint.)
        if (attempt > 1) conn.follow_master(BootClock::now() + conn.timeouts().connect);
        AcquireAttempt sent;
        try {
            sent = acquire_resolving(node, keys, token, ttl, info, queueing, reached);
        } catch (const RedisUnavailable& e) {
            // A restart, a failover, a network blip: the wait still has time, and a waiter rides
            // it out rather than fail a job that would have got the lock a little later. The
            // queue entry, if the server kept it, keeps our place (the acquire script finds our
            // token there); otherwise the next answered attempt queues us at the tail. A run
            // without --wait keeps failing at once (69). Errors outside this family (AUTH,
            // WRONGTYPE, TLS, an old server) are not transient and end the wait.
            if (!waiting) throw;
            Deadline now = BootClock::now();
            if (now >= give_up)
                throw RedisUnavailable(fmt::format(
                    "gave up waiting for lock '{}' after {}: Redis still unavailable ({})",
                    keys.key, format_duration(wait), e.what()));
            Millis delay = std::min(outage.next(), std::chrono::ceil<Millis>(give_up - now));
            log::verbose("waiting for lock '{}': Redis unavailable ({}); trying again in {}",
                         keys.key, e.what(), format_duration(delay));
            pause(delay, signals);
            continue;
        }
        outage.reset();
        result.last = sent.result;
        result.lease_start = sent.sent;
        if (result.last.acquired && (result.interrupted_by = stopping_signal(signals))) {
            // Told to stop while the acquire was in flight: give the lock straight back (which
            // wakes the next waiter) rather than start the command.
            try {
                node.release(keys, token);
            } catch (const std::exception& e) {
                log::warning("could not hand back lock '{}' ({}); it expires by itself", keys.key,
                             e.what());
            }
            result.last.acquired = false;
            return result;
        }
        // --once-per: the slot's run is done. The script has taken us out of the queue and
        // handed the free lock on; nothing of ours is left to give up.
        if (result.last.slot_done) return result;
        if (result.last.acquired) {
            if (attempt > 1)
                log::verbose(
                    "waited {} for lock '{}'",
                    format_duration(std::chrono::duration_cast<Millis>(BootClock::now() - start)),
                    keys.key);
            return result;
        }
        Deadline now = BootClock::now();
        if (now >= give_up) {
            if (waiting) abandon(node, keys, token, ttl);
            return result;
        }

        Millis block = std::chrono::ceil<Millis>(give_up - now);
        // Bounded by the holder's expiry (+1ms: wake just after it, not just before), so that a
        // holder that died without releasing is taken over; the place in the queue is kept.
        block = std::min(block, result.last.holder_pttl >= 0 ? Millis(result.last.holder_pttl + 1)
                                                             : no_ttl_recheck);
        block = std::max(block, Millis(1));  // BLPOP's 0 would mean "forever"
        // The server chooses the holder's TTL; the socket deadline below must stay ours, so a
        // wait longer than a minute is a series of BLPOPs (each retry keeps our queue place).
        block = std::min(block, Millis(60'000));
        if (!announced)
            log::verbose("lock '{}' is busy; waiting (up to {})", keys.key,
                         wait == Millis::max() ? std::string("forever") : format_duration(wait));
        announced = true;
        view.saw(result.last);
        if (view.enabled())
            watch_blocked(node, keys, token, block, signals, outage, view);
        else
            block_on_wake_list(conn, keys, token, block, signals, outage);
    }
}

}  // namespace

WaitResult acquire_waiting(LockNode& node, const LockKeys& keys, const std::string& token,
                           Millis ttl, const HolderInfo* info, Millis wait, SignalEvents& signals,
                           const WaitProgressFn& progress) {
    bool reached = false;  // an acquire may have reached Redis: we may be queued, or even hold it
    try {
        return wait_loop(node, keys, token, ttl, info, wait, signals, reached, progress);
    } catch (...) {
        // Whatever ends the run now (Redis gone, an error reply, a lost reply twice), it must not
        // leave a lock of ours, or a place in the queue, behind.
        if (reached) abandon(node, keys, token, ttl, /*quiet=*/true);
        throw;
    }
}

}  // namespace redlock

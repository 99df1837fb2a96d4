#include "lock/waiter.hpp"

#include <fmt/format.h>
#include <poll.h>

#include <algorithm>

#include "lock/acquire_retry.hpp"
#include "redis/socket.hpp"
#include "util/backoff.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {
namespace {

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

WaitResult wait_loop(LockNode& node, const LockKeys& keys, const std::string& token, Millis ttl,
                     const HolderInfo* info, Millis wait, SignalEvents& signals, bool& reached) {
    Deadline start = BootClock::now();
    Deadline give_up = wait == Millis::max() ? Deadline::max() : start + wait;
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
        conn.set_cancel_fd(signals.fd());
        try {
            Reply r = conn.command(
                {"BLPOP", keys.wake_key(token), fmt::format("{:.3f}", block.count() / 1000.0)},
                BootClock::now() + block + conn.timeouts().command);
            check(r, fmt::format("waiting for lock '{}'", keys.key));
            outage.reset();
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
            log::verbose("waiting for lock '{}' was interrupted ({}); looking again in {}",
                         keys.key, e.what(), format_duration(delay));
            pause(delay, signals);
        } catch (...) {
            conn.set_cancel_fd(-1);
            throw;
        }
        conn.set_cancel_fd(-1);
    }
}

}  // namespace

WaitResult acquire_waiting(LockNode& node, const LockKeys& keys, const std::string& token,
                           Millis ttl, const HolderInfo* info, Millis wait, SignalEvents& signals) {
    bool reached = false;  // an acquire may have reached Redis: we may be queued, or even hold it
    try {
        return wait_loop(node, keys, token, ttl, info, wait, signals, reached);
    } catch (...) {
        // Whatever ends the run now (Redis gone, an error reply, a lost reply twice), it must not
        // leave a lock of ours, or a place in the queue, behind.
        if (reached) abandon(node, keys, token, ttl, /*quiet=*/true);
        throw;
    }
}

}  // namespace redlock

#include "waiter.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "duration.hpp"
#include "errors.hpp"
#include "log.hpp"
#include "script.hpp"
#include "socket.hpp"

namespace redlock {
namespace {

// An unclaimed wake-up lingers this long at most; a waiter between its failed acquire and its
// BLPOP needs it for only a round trip.
constexpr Millis wake_linger(10'000);

// Without a TTL on the holder's key (a foreign client's lock) there is no expiry to wait for;
// look again this often.
constexpr Millis no_ttl_recheck(1'000);

// Returns the first queued signal that ends the wait, swallowing the others (SIGWINCH, SIGCHLD).
std::optional<int> stopping_signal(SignalEvents& signals) {
    while (auto sig = signals.next()) {
        if (*sig != SIGWINCH && *sig != SIGCHLD) return sig;
    }
    return std::nullopt;
}

// A waiter that leaves may have popped the wake-up meant for the next one; hand it on if the lock
// is free. Best effort: when this fails, the next waiter still wakes at its TTL bound.
void pass_on_wakeup(LockNode& node, const LockKeys& keys) {
    try {
        scripts::wake().run(node.connection(), {keys.key, keys.wait},
                            {std::to_string(wake_linger.count())},
                            BootClock::now() + node.connection().timeouts().command);
    } catch (const std::exception& e) {
        log::verbose("could not pass on the wake-up for lock '{}': {}", keys.key, e.what());
    }
}

}  // namespace

WaitResult acquire_waiting(LockNode& node, const LockKeys& keys, const std::string& token,
                           Millis ttl, const HolderInfo* info, Millis wait, SignalEvents& signals) {
    Deadline start = BootClock::now();
    Deadline give_up = wait == Millis::max() ? Deadline::max() : start + wait;
    Connection& conn = node.connection();
    WaitResult result;
    for (int attempt = 1;; ++attempt) {
        // Checked before every attempt: a waiter told to stop must never take the lock.
        if ((result.interrupted_by = stopping_signal(signals))) {
            if (attempt > 1) pass_on_wakeup(node, keys);
            return result;
        }
        result.lease_start = BootClock::now();
        result.last = node.acquire(keys, token, ttl, info);
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
        if (now >= give_up) return result;

        Millis block = std::chrono::ceil<Millis>(give_up - now);
        // +1ms: wake just after the key's expiry, not just before it.
        block = std::min(block, result.last.holder_pttl >= 0 ? Millis(result.last.holder_pttl + 1)
                                                             : no_ttl_recheck);
        block = std::max(block, Millis(1));  // BLPOP's 0 would mean "forever"
        if (attempt == 1)
            log::verbose("lock '{}' is busy; waiting (up to {})", keys.key,
                         wait == Millis::max() ? std::string("forever") : format_duration(wait));
        conn.set_cancel_fd(signals.fd());
        try {
            check(conn.command({"BLPOP", keys.wait, fmt::format("{:.3f}", block.count() / 1000.0)},
                               BootClock::now() + block + conn.timeouts().command),
                  fmt::format("waiting for lock '{}'", keys.key));
        } catch (const Cancelled&) {
            // A signal arrived; the top of the loop decides whether it ends the wait.
        } catch (...) {
            conn.set_cancel_fd(-1);
            throw;
        }
        conn.set_cancel_fd(-1);
    }
}

}  // namespace redlock

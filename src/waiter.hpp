// --wait: waiting for a busy lock without polling. Waiters block on the lock's wake-up list
// (BLPOP, which Redis serves first-come first-served); release pushes exactly one wake-up, so a
// hand-off costs a few commands however many wait. Each block is bounded by the holder's
// remaining TTL, so a holder that died without releasing is still taken over when its key expires.
#pragma once

#include <optional>

#include "clock.hpp"
#include "lock.hpp"
#include "signals.hpp"

namespace redlock {

struct WaitResult {
    AcquireResult last;                 // the final attempt: acquired, or the holder's state
    std::optional<int> interrupted_by;  // a signal ended the wait before the lock was taken
    Deadline lease_start{};             // when the successful acquire was sent
};

// Tries to acquire, waiting up to `wait` (Millis::max(): without bound; zero: a single try).
// Signals that would end the process (TERM, INT, HUP, QUIT, USR1, USR2) end the wait.
WaitResult acquire_waiting(LockNode& node, const LockKeys& keys, const std::string& token,
                           Millis ttl, const HolderInfo* info, Millis wait, SignalEvents& signals);

}  // namespace redlock

// --wait: waiting for a busy lock without polling. A waiter joins the lock's queue in the same
// script as its failed attempt and blocks on its own wake-up list (BLPOP); a release pops the
// queue's head and wakes exactly that waiter, so the lock passes in arrival order and a hand-off
// costs a few commands however many wait. Each block is bounded by the holder's remaining TTL,
// so a holder that died without releasing is still taken over when its key expires; a waiter
// that wakes that way and finds the holder alive keeps its place in the queue.
#pragma once

#include <optional>

#include "lock/lock.hpp"
#include "lock/wait_progress.hpp"
#include "util/clock.hpp"
#include "util/signals.hpp"

namespace redlock {

struct WaitResult {
    AcquireResult last;                 // the final attempt: acquired, or the holder's state
    std::optional<int> interrupted_by;  // a signal ended the wait before the lock was taken
    Deadline lease_start{};             // when the successful acquire was sent
};

// Tries to acquire, waiting up to `wait` (Millis::max(): without bound; zero: a single try).
// Signals that would end the process (TERM, INT, HUP, QUIT, USR1, USR2) end the wait.
// While waiting, Redis being unavailable (a restart, a failover, RedisUnavailable) is retried
// with backoff until `wait` runs out, then thrown as RedisUnavailable; a single try throws at once.
// `progress`, when set, is called while the run waits, at most once a second (wait_progress.hpp);
// the wait then blocks in slices of a second with one small read between two.
WaitResult acquire_waiting(LockNode& node, const LockKeys& keys, const std::string& token,
                           Millis ttl, const HolderInfo* info, Millis wait, SignalEvents& signals,
                           const WaitProgressFn& progress = WaitProgressFn());

}  // namespace redlock

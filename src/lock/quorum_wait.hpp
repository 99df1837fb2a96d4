// --wait for a quorum lock. The waiters' queue of the single-node mode lives on one node and
// cannot order waiters across several, so a quorum waiter retries after a random delay instead,
// as the Redlock spec does: contenders that collided desynchronise instead of splitting the
// votes again. No first-come-first-served order.
#pragma once

#include <optional>
#include <string>

#include "lock/quorum.hpp"
#include "util/clock.hpp"
#include "util/signals.hpp"

namespace redlock {

struct QuorumWaitResult {
    QuorumAttempt last;
    std::optional<int> interrupted_by;  // a signal ended the wait before the lock was taken
};

// The bounds of the random pause between two attempts.
inline constexpr Millis quorum_retry_min{50};
inline constexpr Millis quorum_retry_max{250};

// Tries until acquired or `wait` has passed (zero: a single try; Millis::max(): no bound).
// When the last attempt reached fewer than a majority, throws the error it saw (RedisUnavailable
// unless every node failed in a more specific way) with how many nodes answered.
QuorumWaitResult quorum_acquire_waiting(QuorumLock& lock, const LockKeys& keys,
                                        const std::string& token, Millis ttl,
                                        const HolderInfo* info, Millis wait, SignalEvents& signals);

// "lock 'k' is held elsewhere: 1 of 5 nodes accepted it (5 answered, 3 needed); ..." for an
// attempt that reached a majority but did not get the lock.
std::string quorum_busy_message(const LockKeys& keys, const QuorumAttempt& a,
                                std::optional<Millis> wait);

}  // namespace redlock

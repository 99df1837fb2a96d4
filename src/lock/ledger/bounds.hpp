// The bounds every number a server sends about a lock is held to where its reply is read: fences,
// TTLs and Redis's clock. Below the ledger, the holder info and the step results, which all check
// against them.
#pragma once

#include "util/clock.hpp"

namespace redlock {

// Fences are below 2^62: far above any counter Redis's clock seeds (microseconds, ~2^51), and
// far enough below INCR's limit (2^63-1) that neither INCR nor the quorum's max + 1 overflows.
// A server that hands out or keeps a fence at or past it is refused with DataError.
inline constexpr long long fence_limit = 1LL << 62;
// The longest TTL taken from a reply: ~100 years. Longer ones are legal in Redis, but a Millis
// that large overflows when added to a clock (nanoseconds); every wait is far shorter anyway.
inline constexpr Millis max_server_ttl{100LL * 366 * 24 * 3600 * 1000};
// TIME's seconds beyond this (about year 36812) would overflow the product in milliseconds.
inline constexpr long long max_unix_seconds = 1LL << 40;

}  // namespace redlock

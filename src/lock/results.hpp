// What one node's lock steps answer, as the decoders of lock_replies.hpp make it from a reply,
// and the bounds every number in such a reply is held to. Below lock.hpp and the decoders, so
// that neither has to include the other.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lock/holder_info.hpp"
#include "lock/ledger.hpp"
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

struct AcquireResult {
    bool acquired = false;
    long long fence = 0;               // when acquired: the fencing token
    long long holder_pttl = -1;        // when busy: the holder's remaining TTL in ms (-1: none set)
    std::optional<HolderInfo> holder;  // when busy: the holder's recorded info, if any
    // When busy: shared holders (--shared runs) hold it, not one exclusive holder. How many were
    // in when read (0: not known), and `holder` is one of them when one recorded its info.
    bool shared = false;
    long long shared_holders = 0;
    int permit = 1;  // when acquired: which of the --permits (1: a plain lock)
    // When a re-sent permits acquire found its permit already taken by this token: the node's
    // counter now, which other holders may have moved past `fence` (the one this token drew). A
    // quorum counts this, not `fence`, toward its own fence (quorum.cpp says why).
    std::optional<long long> counter;
    // --once-per: the slot this attempt belongs to, by the node's clock (acquired or skipped).
    std::optional<long long> slot;
    // --once-per: the lock was free but the slot's run is already done, so it was not taken.
    std::optional<SlotRecord> slot_done;
    // Permits, when acquired: which permits were free on the node before it gave one (element
    // i-1 for permit i). A quorum whose nodes gave a run different permits asks next for the
    // permit most of them had free (QuorumLock::acquire).
    std::vector<bool> free_permits;
    // When busy: the lock was free, but the node lost its data (no fence counter) less than the
    // restart guard ago, so it is held back (holder_pttl: how long still); the node's uptime in
    // seconds. See restart_guard_left in src/lock/scripts/lib/queue.lua.
    std::optional<long long> restart_uptime_s;
};

enum class RenewResult { renewed, not_owner };

enum class ReleaseResult { released, absent, not_owner };

// A run's last round trip (ledger.lua): its record written and its lock released in one step.
struct FinishResult {
    ReleaseResult release = ReleaseResult::released;
    RecordResult record;
};

}  // namespace redlock

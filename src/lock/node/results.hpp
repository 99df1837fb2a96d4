// What one node's lock steps answer, as the decoders of lock_replies.hpp make it from a reply
// (lock/ledger/bounds.hpp: the bounds every number in such a reply is held to). Below lock.hpp,
// the decoders and the status reads (lock_state.hpp), which take these types from here rather
// than from one another.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lock/ledger/bounds.hpp"
#include "lock/ledger/ledger.hpp"
#include "lock/node/holder_info.hpp"
#include "lock/node/keys.hpp"
#include "util/clock.hpp"

namespace redlock {

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

// What the operator commands know about a lock, read in one atomic step by status.lua: the token,
// TTL, fencing counter and (when it belongs to the current token) the holder's recorded info.
struct LockState {
    LockKeys keys;
    std::string type;                // the lock key's Redis TYPE: "none" (free), "string" (a lock)
    std::string token;               // when held
    long long pttl_ms = -2;          // as PTTL: -2 no key, -1 no expiry set
    std::optional<long long> fence;  // the fencing counter: the last fence handed out
    long long redis_now_ms = 0;      // Redis's clock at the read, Unix ms
    std::optional<HolderInfo> holder;  // only when recorded for the current token

    bool held() const { return type == "string"; }
    bool is_lock() const { return type == "string" || type == "none"; }
};

enum class RenewResult { renewed, not_owner };

enum class ReleaseResult { released, absent, not_owner };

// A run's last round trip (ledger.lua): its record written and its lock released in one step.
struct FinishResult {
    ReleaseResult release = ReleaseResult::released;
    RecordResult record;
};

}  // namespace redlock

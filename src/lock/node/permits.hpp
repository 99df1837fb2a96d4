// Permits (--permits N > 1): up to N holders of one lock at once, each with its own permit key,
// token, TTL and fence (src/lock/scripts/permits.lua has the data model). A LockNode built with
// permits > 1 speaks it through make_permits_mode; the rest is what the operator commands read.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lock/node/holder_info.hpp"
#include "lock/node/keys.hpp"
#include "lock/node/lock_mode.hpp"
#include "redis/connection.hpp"

namespace redlock {

// Each acquire and release surveys all N permit keys inside one script, which blocks Redis for
// that long: 1000 keys cost well under a millisecond, ten times that would start to show in the
// latency of every other client of the server.
inline constexpr int max_permits = 1000;

// The lock key's value while permits are held: the record of N ("redlock-permits/N").
std::string permits_record(int permits);
// N when `value` is such a record.
std::optional<int> permits_of(std::string_view value);

// The prefix of the permit keys: permit i is this followed by i, in the lock's slot.
std::string permit_key_prefix(const LockKeys& keys);

struct PermitHolder {
    int permit = 0;
    std::string token;
    long long pttl_ms = -2;
    std::optional<HolderInfo> holder;  // only when recorded for this token
};

// Also what a shared lock (--shared, lock/node/shared.hpp) reads as: `shared` set, every holder's
// permit 0.
struct PermitsState {
    int permits = 0;      // N, 0 when the lock is not a permits lock right now
    bool shared = false;  // a shared lock's marker was there
    std::optional<long long> fence;
    long long redis_now_ms = 0;
    std::vector<PermitHolder> holders;  // by permit number
};

// The permits protocol (lock_mode.hpp) for --permits `permits` > 1.
std::unique_ptr<LockMode> make_permits_mode(int permits);
// Whether `token` holds one of the lock's permits, whatever N it was taken with.
bool permits_hold(Connection& conn, const LockKeys& keys, const std::string& token);

// One atomic read of every permit of the lock.
PermitsState read_permits(Connection& conn, const LockKeys& keys);
// release --force: ends every permit; returns the holders removed.
std::vector<PermitHolder> force_release_permits(Connection& conn, const LockKeys& keys);

// Whether `key` is a permit key, a permit's holder info or drawn fence of some lock, or a shared
// lock's holders set or holder record (list skips them).
bool is_permit_companion(std::string_view key);

// The scripts' "another --permits holds this name" error reply as UsageError (exit 64): the
// callers disagree about the lock, which only changing their options fixes. Else does nothing.
void throw_if_permits_mismatch(const Reply& reply, const LockKeys& keys);

// The replies that permits.lua and shared.lua share: a status (what N or the shared marker is,
// fence, Redis's time, each holder) and the holders a force release removed. `what` names the
// script in errors.
PermitsState holders_status(const Reply& reply, const LockKeys& keys, std::string_view what);
std::vector<PermitHolder> removed_holders(const Reply& reply, const LockKeys& keys,
                                          std::string_view what);

}  // namespace redlock

// What the operator commands know about a lock, read in one atomic step by status.lua: the token,
// TTL, fencing counter and (when it belongs to the current token) the holder's recorded info.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lock/holder_info.hpp"
#include "lock/keys.hpp"
#include "redis/connection.hpp"

namespace redlock {

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

// One lock. Throws DataError when the key holds something other than a lock token.
LockState read_lock_state(Connection& conn, const LockKeys& keys);
// The same from status.lua's reply, read in a pipeline with others.
LockState checked_lock_state(const LockKeys& keys, const Reply& reply);

// release --force on a plain lock, through the script that also wakes its waiters: the state it
// had (token, TTL, holder info), or nullopt when it was not held.
std::optional<LockState> force_release_lock(Connection& conn, const LockKeys& keys);

}  // namespace redlock

// Reading what the operator commands know about a lock (LockState, results.hpp) in one atomic
// step by status.lua, and release --force on a plain lock.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lock/node/keys.hpp"
#include "lock/node/results.hpp"
#include "redis/connection.hpp"

namespace redlock {

// One lock. Throws DataError when the key holds something other than a lock token.
LockState read_lock_state(Connection& conn, const LockKeys& keys);
// The same from status.lua's reply, read in a pipeline with others.
LockState checked_lock_state(const LockKeys& keys, const Reply& reply);

// release --force on a plain lock, through the script that also wakes its waiters: the state it
// had (token, TTL, holder info), or nullopt when it was not held.
std::optional<LockState> force_release_lock(Connection& conn, const LockKeys& keys);

}  // namespace redlock

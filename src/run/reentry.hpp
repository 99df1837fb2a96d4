// Reentrancy across the process tree: a redlock-run started (at any depth) under a redlock-run
// that holds the same lock on the same Redis runs its command directly instead of deadlocking
// on its own ancestor's lock. The ancestor exports REDLOCK_KEY, REDLOCK_TOKEN and REDLOCK_REDIS.
#pragma once

#include <string>

#include <vector>

#include "lock/backend.hpp"

namespace redlock {

// When the environment says an ancestor holds `lock` on the same Redis (or quorum), checks with
// Redis that the ancestor's token is still the current one and replaces this process with the
// command (execvp: never returns; SpawnError 127/126 when it cannot be run). Throws Error with
// exit_code::lock_lost when the token is not current, and the usual Redis errors when it cannot
// be checked: a nested run never runs unverified. Returns normally when not nested in a holder.
// Call before any signal is blocked or thread is started: the command inherits both.
void exec_if_held_by_ancestor(LockBackend& lock, const std::vector<std::string>& command);

}  // namespace redlock

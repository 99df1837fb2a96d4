// The plain lock (no --permits, no --shared): one holder, whose token is the lock key's value;
// acquire.lua, renew.lua, release.lua, ledger.lua and abandon.lua each do one step atomically.
#pragma once

#include <memory>

#include "lock/node/lock_mode.hpp"

namespace redlock {

std::unique_ptr<LockMode> make_plain_mode();

}  // namespace redlock

// Shared holders (--shared): any number of shared holders of one name at once, no exclusive
// holder beside them (src/lock/scripts/shared.lua has the data model). A LockNode built shared
// speaks it through make_shared_mode; the rest is what the operator commands read.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lock/node/keys.hpp"
#include "lock/node/lock_mode.hpp"
#include "lock/node/permits.hpp"
#include "redis/connection.hpp"

namespace redlock {

// The lock key's value while shared holders are in: every exclusive holder's SET NX fails on it.
inline constexpr std::string_view shared_marker = "redlock-shared";

inline constexpr const char* shared_permits_refusal =
    "--shared does not combine with --permits above 1: a name is either a permits lock or a "
    "shared/exclusive lock; give one of them";

// The sorted set of a shared lock's holders, and the prefix of each holder's record.
std::string shared_holders_key(const LockKeys& keys);
std::string shared_record_prefix(const LockKeys& keys);

// The shared protocol (lock_mode.hpp) for --shared.
std::unique_ptr<LockMode> make_shared_mode();
// Whether `token` is one of the lock's shared holders.
bool shared_holds(Connection& conn, const LockKeys& keys, const std::string& token);

// One atomic read of every shared holder: PermitsState with `shared` set and permit 0 for each.
PermitsState read_shared(Connection& conn, const LockKeys& keys);
// release --force: ends every shared hold; returns the holders removed.
std::vector<PermitHolder> force_release_shared(Connection& conn, const LockKeys& keys);

}  // namespace redlock

// Reading the lock scripts' replies. Pure functions of a reply, so that the unit tests and the
// fuzzer (tests/fuzz) can feed them anything a server might send, without a server.
#pragma once

#include <string_view>

#include "lock/keys.hpp"
#include "lock/lock.hpp"
#include "lock/lock_state.hpp"
#include "redis/connection.hpp"

namespace redlock {

// Each maps an error reply as check() does and throws RedisError for a reply of the wrong shape;
// `key` names the lock in the messages.
AcquireResult acquire_result(const Reply& reply, std::string_view key);
RenewResult renew_result(const Reply& reply, std::string_view key);
ReleaseResult release_result(const Reply& reply, std::string_view key);
// abandon.lua's reply: whether it deleted a lock of ours.
bool abandon_result(const Reply& reply, std::string_view key);
// status.lua's reply. Does not judge the key's type (see LockState::is_lock).
LockState lock_state_from_reply(const LockKeys& keys, const Reply& reply);

}  // namespace redlock

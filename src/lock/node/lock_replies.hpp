// Reading the lock scripts' replies. Pure functions of a reply, so that the unit tests and the
// fuzzer (tests/fuzz) can feed them anything a server might send, without a server.
#pragma once

#include <string>
#include <string_view>

#include "lock/node/keys.hpp"
#include "lock/node/results.hpp"
#include "redis/reply.hpp"

namespace redlock {

// `fence`, or DataError naming lock `key` when it is outside 1..fence_limit-1.
long long checked_fence(long long fence, std::string_view key);

// Each maps an error reply as check() does and throws UnexpectedReply (a RedisError) for a reply
// of the wrong shape; `key` names the lock in the messages.
// Acquired: {1, fence[, 'slot', slot]} (permits.lua adds 'permit', n, read by LockNode); busy:
// {0, pttl, holder info...}; --once-per's skip: {2, slot, the slot record's fields...}.
AcquireResult acquire_result(const Reply& reply, std::string_view key);
RenewResult renew_result(const Reply& reply, std::string_view key);
ReleaseResult release_result(const Reply& reply, std::string_view key);
// ledger.lua's reply; `released`: whether the release was asked for (LockNode::finish), whose
// result is then required.
FinishResult finish_result(const Reply& reply, std::string_view key, bool released);
// abandon.lua's reply: whether it deleted a lock of ours.
bool abandon_result(const Reply& reply, std::string_view key);
// wait_status.lua's reply: the holder as busy (TTL, info) and the waiter's place in the queue
// (0: not in it).
struct WaitStatus {
    AcquireResult busy;
    long long place = 0;
};
WaitStatus wait_status_result(const Reply& reply, std::string_view key);
// The most waiters a place is believed for: a queue is a Redis list, but a place past this is
// a server's invention.
inline constexpr long long max_queue_place = 1LL << 32;
// status.lua's reply. Does not judge the key's type (see LockState::is_lock).
LockState lock_state_from_reply(const LockKeys& keys, const Reply& reply);

}  // namespace redlock

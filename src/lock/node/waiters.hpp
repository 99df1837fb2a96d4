// Who waits for a lock (status): the queue in order, each waiter's host, pid, since when and
// mode, read with waiters.lua. The waiter recorded itself when it joined (lib/queue.lua).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lock/node/keys.hpp"
#include "redis/connection.hpp"

namespace redlock {

struct Waiter {
    std::string host;        // empty when unknown (a waiter of a version that recorded nothing)
    long long pid = 0;       // 0 when unknown
    long long since_ms = 0;  // Unix time in ms by Redis's clock when it joined; 0 when unknown
    bool shared = false;     // a --shared run, else exclusive
};

struct Waiters {
    std::vector<Waiter> waiting;  // live waiters, longest waiting first, at most max_waiters_read
    std::size_t total = 0;        // the queue's length (dead entries not yet dropped included)
    long long redis_now_ms = 0;   // Redis's clock when read
};

// status reads at most this many entries of a queue: one reply, bounded however many wait.
inline constexpr std::size_t max_waiters_read = 100;

Waiters read_waiters(Connection& conn, const LockKeys& keys);
// read_waiters, or none when the queue cannot be read: status answers about the lock first
// (-v says why).
Waiters waiters_or_none(Connection& conn, const LockKeys& keys);
// The same from waiters.lua's reply, read in a pipeline with others.
Waiters waiters_or_none(const Reply& reply, const LockKeys& keys);
// The pure part, for the unit tests: every number range-checked, anything out of shape refused
// (RedisError) or, inside a waiter's record, taken as unknown.
Waiters waiters_from_reply(const Reply& reply, std::string_view key);

}  // namespace redlock

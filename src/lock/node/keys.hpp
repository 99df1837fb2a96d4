// Naming of a lock's keys. Everything a lock script touches must hash to the same Redis Cluster
// slot as the lock key, so companions (fence counter, and later holder info and waiter lists)
// are built to share it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace redlock {

// A key in the same slot as `key`, distinct for every (key, suffix) whose suffix has no '}':
// `{key}:suffix` when the key has no '}', else `{tag}key:suffix` with the key's own hash tag or
// a tag of the key's slot (keys.cpp says why no two keys share one).
std::string companion_key(std::string_view key, std::string_view suffix);

// The lock key whose companion with `suffix` is exactly `companion`, if there is one.
std::optional<std::string_view> lock_key_of(std::string_view companion, std::string_view suffix);

// When `key` is a companion of some lock key under any suffix a lock uses (LockKeys, the
// permits' and shared holders' keys, a waiter's wake-up list and mark): that lock key and the
// suffix. Such a key taken as a lock would collide with the lock it belongs to.
struct CompanionOf {
    std::string_view lock;
    std::string_view suffix;
};
std::optional<CompanionOf> companion_of(std::string_view key);

struct LockKeys {
    std::string name;   // as the user gave it
    std::string key;    // prefix + name: the Redis key holding the token
    std::string fence;  // the fencing counter, never expires
    std::string info;   // holder-info hash (--hold-info), same TTL as the lock
    std::string wait;   // waiters' queue: their tokens, longest waiting first
    std::string wake;   // prefix of each waiter's wake-up list (prefix + token), same slot

    // What finished runs leave (lock/ledger/ledger.hpp): the run ledger, a capped list of past runs
    // newest first, and the --once-per record of the latest completed slot (expires by itself).
    std::string ledger;
    std::string once;
    // The set of open runs: the holder records of permit and shared holders with a ledger, which
    // outlive their lease until their end is recorded (lock/scripts/lib/abandoned.lua).
    std::string open;

    std::string wake_key(const std::string& token) const { return wake + token; }

    static LockKeys make(std::string_view name, std::string_view prefix);
};

}  // namespace redlock

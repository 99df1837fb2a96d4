// What a Redis Cluster client reads from the servers' replies: who owns which slots (CLUSTER
// SLOTS), where a redirection points (MOVED / ASK), and which key a command is routed by.
// Pure functions, so they are tested without a cluster.
#pragma once

#include <hiredis/hiredis.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

inline constexpr unsigned cluster_slots = 16384;

// Redis Cluster's slot for a key (CRC16/XMODEM of the hash tag or whole key, mod 16384).
unsigned hash_slot(std::string_view key);
// The part of the key Redis Cluster hashes: the first non-empty {...}, else the whole key.
std::string_view hashed_part(std::string_view key);

struct NodeAddress {
    std::string host;
    int port = 0;

    std::string describe() const;  // "127.0.0.1:7000", "[::1]:7000"
    bool operator==(const NodeAddress&) const = default;
};

struct SlotRange {
    unsigned first = 0;
    unsigned last = 0;  // inclusive, as CLUSTER SLOTS reports it
    NodeAddress master;
};

// The master of every slot range in a CLUSTER SLOTS reply. A master listed without an address
// ("" or "?": the node does not know its own) is reached at `asked_host`, the host the reply
// came from, as the Redis documentation says. Throws RedisUnavailable (a protocol error) on a
// malformed reply.
std::vector<SlotRange> parse_cluster_slots(const redisReply& reply, std::string_view asked_host);

struct Redirect {
    enum class Kind { moved, ask } kind;
    unsigned slot = 0;
    NodeAddress to;
};

// "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381"; nullopt for any other error text.
std::optional<Redirect> parse_redirect(std::string_view error);

// The key Redis Cluster routes `argv` by: the first key of EVAL/EVALSHA (every script here passes
// all its keys, in one slot, in KEYS), none for keyless commands, else the first argument.
std::optional<std::string_view> routing_key(const std::vector<std::string>& argv);

}  // namespace redlock

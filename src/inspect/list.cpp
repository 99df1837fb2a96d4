// list: every lock under the prefix, found with SCAN (never KEYS, which blocks the server for the
// whole keyspace; on every master of a Redis Cluster), read in pipelined batches, shown sorted by
// name.
#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <map>
#include <set>

#include "inspect/inspect.hpp"
#include "inspect/lock_report.hpp"
#include "inspect/permits_report.hpp"
#include "lock/lock_state.hpp"
#include "redis/cluster.hpp"
#include "util/errors.hpp"
#include "util/exit_codes.hpp"
#include "util/log.hpp"
#include "util/printable.hpp"

namespace redlock {
namespace {

// Keys SCAN looks at per call, matching or not: each call holds the server for as long as it
// takes to visit them, and in a large keyspace every visit is a cache miss. Measured with
// bench/herd over 10^6 keys (a loaded 2-core VM): COUNT 1000 held Redis 1.1-1.5 ms per call,
// 250 about 0.26 ms, for the same `list` time in all (the visits, not the round trips, are what
// takes the time).
constexpr const char* scan_count = "250";

// `prefix` as a glob that matches only itself: SCAN's MATCH would read "jobs[1]:" as a pattern.
std::string glob_escape(std::string_view prefix) {
    std::string out;
    for (char c : prefix) {
        if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
        out += c;
    }
    return out;
}

// Whether `key` is a companion of some lock key: its fence, info or wait key, or a waiter's
// ':alive' mark (a string, unlike the others). Rebuilding the companion from the candidate lock
// key proves the match, so a lock whose name merely ends in ":fence" is still listed.
bool is_companion(std::string_view key) {
    for (std::string_view suffix : {"fence", "info", "wait"}) {
        if (lock_key_of(key, suffix)) return true;
    }
    if (is_permit_companion(key)) return true;
    // companion_key(lock, "wake:") + 32-hex token + ":alive"
    constexpr std::string_view alive = ":alive", wake = ":wake:";
    constexpr std::size_t token_len = 32;
    if (!key.ends_with(alive) || key.size() < alive.size() + token_len + wake.size()) return false;
    std::string_view prefix = key.substr(0, key.size() - alive.size() - token_len);
    std::string_view token = key.substr(prefix.size(), token_len);
    if (token.find_first_not_of("0123456789abcdef") != std::string_view::npos) return false;
    if (!prefix.ends_with(wake)) return false;
    return lock_key_of(prefix, "wake:").has_value();
}

std::set<std::string> scan_keys(Connection& conn, const std::string& match) {
    std::set<std::string> keys;  // SCAN may return a key more than once
    std::string cursor = "0";
    do {
        Reply reply = conn.command({"SCAN", cursor, "MATCH", match, "COUNT", scan_count});
        const redisReply& r = check(reply, fmt::format("scanning for '{}'", match));
        if (r.type != REDIS_REPLY_ARRAY || r.elements != 2 ||
            r.element[0]->type != REDIS_REPLY_STRING || r.element[1]->type != REDIS_REPLY_ARRAY)
            throw RedisError("unexpected reply to SCAN");
        cursor.assign(r.element[0]->str, r.element[0]->len);
        const redisReply& batch = *r.element[1];
        for (std::size_t i = 0; i < batch.elements; ++i)
            keys.emplace(batch.element[i]->str, batch.element[i]->len);
    } while (cursor != "0");
    return keys;
}

// The permits of each permits lock (--permits N), by key.
using PermitsByKey = std::map<std::string, PermitsState>;

void print_table(const std::vector<LockState>& locks, const PermitsByKey& permits) {
    if (locks.empty()) return;
    using Row = std::array<std::string, 6>;
    std::vector<Row> rows{{"NAME", "TTL", "FENCE", "HOLDER", "HELD FOR", "COMMAND"}};
    for (const LockState& lock : locks) {
        if (auto p = permits.find(lock.keys.key); p != permits.end()) {
            rows.push_back({printable(lock.keys.name), ttl_text(lock),
                            p->second.fence ? std::to_string(*p->second.fence) : "-",
                            permits_summary(p->second), "-", "-"});
            continue;
        }
        std::string held_for = held_for_text(lock);
        rows.push_back(
            {printable(lock.keys.name), ttl_text(lock),
             lock.fence ? std::to_string(*lock.fence) : "-", holder_text(lock),
             held_for.empty() ? "-" : held_for,
             lock.holder && !lock.holder->command.empty() ? printable(lock.holder->command) : "-"});
    }
    std::array<std::size_t, 6> width{};
    for (const Row& row : rows)
        for (std::size_t c = 0; c < row.size(); ++c)
            width[c] = std::max(width[c], display_width(row[c]));
    std::string out;
    for (const Row& row : rows) {
        std::string line;
        for (std::size_t c = 0; c + 1 < row.size(); ++c)
            line += row[c] + std::string(width[c] - display_width(row[c]) + 2, ' ');
        line += row.back();
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + '\n';
    }
    std::fputs(out.c_str(), stdout);
}

}  // namespace

int list_command(const InspectOptions& options) {
    // A quorum has no single list of locks: each node may hold others' partial attempts.
    if (!options.conn.quorum.empty())
        throw UsageError(
            "'list' reads one node: give a single -u (run it once per node of the quorum)");
    log::set_verbose(options.conn.verbose);
    const std::string& prefix = options.conn.prefix;
    Connection conn(options.conn.endpoint, options.conn.timeouts);
    std::string match = glob_escape(prefix) + options.pattern;
    std::set<std::string> found;
    if (ClusterRouter* cluster = conn.cluster()) {
        // Each master holds only its own slots' keys: the keyspace is the union of their SCANs.
        cluster->for_each_master([&](Connection& node, const NodeAddress&) {
            std::set<std::string> part = scan_keys(node, match);
            found.merge(part);
        });
    } else {
        found = scan_keys(conn, match);
    }

    std::vector<LockKeys> candidates;
    for (const std::string& key : found)
        if (key.starts_with(prefix) && !is_companion(key))
            candidates.push_back(
                LockKeys::make(std::string_view(key).substr(prefix.size()), prefix));
    log::verbose("SCAN MATCH '{}' found {} keys, {} of them lock candidates", printable(match),
                 found.size(), candidates.size());

    // Keys that are not lock tokens (a hash under the prefix) and locks released since the SCAN
    // are left out. `found` is sorted by key, hence by name: the prefix is common to all.
    std::vector<LockState> locks;
    for (LockState& lock : read_lock_states(conn, candidates))
        if (lock.held()) locks.push_back(std::move(lock));
    // A permits lock's key holds only the record of N: its holders are read apart, one round
    // trip per such lock.
    PermitsByKey permits;
    for (const LockState& lock : locks)
        if (permits_of(lock.token)) permits.emplace(lock.keys.key, read_permits(conn, lock.keys));

    if (options.json) {
        JsonWriter json;
        json.begin_array();
        for (const LockState& lock : locks) {
            if (auto p = permits.find(lock.keys.key); p != permits.end())
                write_permits_json(json, lock, p->second);
            else
                write_lock_json(json, lock);
        }
        json.end_array();
        std::fputs((json.str() + "\n").c_str(), stdout);
    } else {
        print_table(locks, permits);
    }
    return exit_code::ok;
}

}  // namespace redlock

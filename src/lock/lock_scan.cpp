#include "lock/lock_scan.hpp"

#include <fmt/format.h>

#include <fnmatch.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <mutex>
#include <set>

#include "lock/node/keys.hpp"
#include "redis/cluster.hpp"
#include "util/errors.hpp"
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

// SCANs `conn` for `match`, calling `take` with each key, until the scan is complete or `take`
// says it has enough (returns false). A key may come more than once.
void scan_each(Connection& conn, const std::string& match,
               const std::function<bool(std::string&&)>& take) {
    std::string cursor = "0";
    do {
        Reply reply = conn.command({"SCAN", cursor, "MATCH", match, "COUNT", scan_count});
        constexpr std::string_view bad = "unexpected reply to SCAN";
        ReplyView r = check(reply, fmt::format("scanning for '{}'", match)).as_array(2, 2, bad);
        // The reply reader bounds the batch (max_reply_elements); COUNT only hints at its size.
        ReplyView batch = r[1].as_array(0, SIZE_MAX, bad);
        cursor = r[0].as_string(bad);
        bool more = true;
        for (std::size_t i = 0; i < batch.size(); ++i)
            more = take(std::string(batch[i].as_string(bad))) && more;
        if (!more) return;
    } while (cursor != "0");
}

std::set<std::string> scan_keys(Connection& conn, const std::string& match) {
    std::set<std::string> keys;  // SCAN may return a key more than once
    scan_each(conn, match, [&](std::string&& key) {
        keys.insert(std::move(key));
        return true;
    });
    return keys;
}

// Runs `scan` on every node whose keys make up the keyspace: each master of a Redis Cluster
// holds only its own slots' keys, and is scanned at the same time as the others (each on a
// thread of its own: `scan` guards what it shares).
void scan_keyspace(Connection& conn, const std::function<void(Connection&)>& scan) {
    if (ClusterRouter* cluster = conn.cluster())
        cluster->for_each_master([&](Connection& node, const NodeAddress&) { scan(node); });
    else
        scan(conn);
}

std::vector<std::string> names_by_companion(Connection& conn, const std::string& prefix,
                                            const std::string& pattern, std::size_t max,
                                            std::string_view suffix) {
    // Every companion key holds its lock key, with the prefix, somewhere: `{KEY}:fence`, or
    // `{TAG}KEY:fence` for a key with a '}' (keys.hpp). The exact test follows.
    std::string match = fmt::format("*{}*:{}", glob_escape(prefix), suffix);
    std::set<std::string> names;
    std::mutex names_mutex;  // the masters of a Cluster are scanned at once
    scan_keyspace(conn, [&](Connection& node) {
        scan_each(node, match, [&](std::string&& key) {
            std::lock_guard hold(names_mutex);
            if (names.size() >= max) return false;
            std::optional<std::string_view> lock = lock_key_of(key, suffix);
            if (!lock || !lock->starts_with(prefix)) return true;
            std::string name(lock->substr(prefix.size()));
            // One name a line, as it is: a name with a control character (a newline would make
            // it two; C1 ones drive terminals) or bytes that are not UTF-8 could only be shown
            // escaped, which is no name to complete, so it is left out.
            if (!name.empty() && is_printable(name) &&
                ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0)
                names.insert(std::move(name));
            return names.size() < max;
        });
    });
    return {names.begin(), names.end()};
}

}  // namespace

std::vector<std::string> lock_names(Connection& conn, const std::string& prefix,
                                    const std::string& pattern, std::size_t max) {
    return names_by_companion(conn, prefix, pattern, max, "fence");
}

std::vector<std::string> ledger_names(Connection& conn, const std::string& prefix,
                                      const std::string& pattern, std::size_t max) {
    return names_by_companion(conn, prefix, pattern, max, "ledger");
}

std::vector<LockState> held_locks(Connection& conn, const std::string& prefix,
                                  const std::string& pattern) {
    std::string match = glob_escape(prefix) + pattern;
    std::set<std::string> found;
    std::mutex found_mutex;  // the masters of a Cluster are scanned at once
    scan_keyspace(conn, [&](Connection& node) {
        std::set<std::string> part = scan_keys(node, match);
        std::lock_guard lock(found_mutex);
        found.merge(part);
    });

    std::vector<LockKeys> candidates;
    for (const std::string& key : found)
        // A companion of some lock (its fence, ledger, queue, a permit, a waiter's mark...) is
        // not a lock: companion_of is the same test that refuses such a NAME (lock_name.cpp).
        if (key.starts_with(prefix) && !companion_of(key))
            candidates.push_back(
                LockKeys::make(std::string_view(key).substr(prefix.size()), prefix));
    log::verbose("SCAN MATCH '{}' found {} keys, {} of them lock candidates", printable(match),
                 found.size(), candidates.size());

    // `found` is sorted by key, hence by name: the prefix is common to all.
    std::vector<LockState> locks;
    for (LockState& lock : read_lock_states(conn, candidates))
        if (lock.held()) locks.push_back(std::move(lock));
    return locks;
}

}  // namespace redlock

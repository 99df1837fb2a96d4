#include "lock/lock_scan.hpp"

#include <fmt/format.h>

#include <fnmatch.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>

#include "lock/node/keys.hpp"
#include "lock/node/ledger_io.hpp"
#include "lock/node/lock_replies.hpp"
#include "lock/node/scripts.hpp"
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

using KeyTaker = std::function<bool(std::string&&)>;

// SCANs `conn` for every pattern of `matches` at once, calling takes[k] with each key that
// matches[k] finds, until each scan is complete or its `take` says it has enough (returns
// false). The scans' calls go out in one write while more than one has pages left: one round
// trip for all. A key may come more than once.
void scan_together(Connection& conn, const std::vector<std::string>& matches,
                   const std::vector<KeyTaker>& takes) {
    std::vector<std::optional<std::string>> cursors(matches.size(), std::string("0"));
    for (;;) {
        std::vector<std::size_t> going;
        std::vector<std::vector<std::string>> commands;
        for (std::size_t k = 0; k < matches.size(); ++k)
            if (cursors[k]) {
                going.push_back(k);
                commands.push_back({"SCAN", *cursors[k], "MATCH", matches[k], "COUNT", scan_count});
            }
        if (going.empty()) return;
        // SCAN changes nothing: on a new connection it may ride in the set-up's write.
        std::vector<Reply> replies =
            conn.read_only_pipeline(commands, BootClock::now() + conn.timeouts().command);
        for (std::size_t j = 0; j < going.size(); ++j) {
            const std::size_t k = going[j];
            constexpr std::string_view bad = "unexpected reply to SCAN";
            ReplyView r =
                check(replies[j], fmt::format("scanning for '{}'", matches[k])).as_array(2, 2, bad);
            // The reply reader bounds the batch (max_reply_elements); COUNT only hints at its
            // size.
            ReplyView batch = r[1].as_array(0, SIZE_MAX, bad);
            std::string cursor(r[0].as_string(bad));
            bool more = true;
            for (std::size_t i = 0; i < batch.size(); ++i)
                more = takes[k](std::string(batch[i].as_string(bad))) && more;
            if (!more || cursor == "0")
                cursors[k].reset();
            else
                cursors[k] = std::move(cursor);
        }
    }
}

void scan_each(Connection& conn, const std::string& match, const KeyTaker& take) {
    scan_together(conn, {match}, {take});
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

// Every companion key holds its lock key, with the prefix, somewhere: `{KEY}:fence`, or
// `{TAG}KEY:fence` for a key with a '}' (keys.hpp). The exact test is companion_name's.
std::string companion_match(const std::string& prefix, std::string_view suffix) {
    return fmt::format("*{}*:{}", glob_escape(prefix), suffix);
}

// The name of the lock whose companion (`suffix`) `key` is, when it is under `prefix` and
// matches `pattern`.
std::optional<std::string> companion_name(const std::string& key, const std::string& prefix,
                                          const std::string& pattern, std::string_view suffix) {
    std::optional<std::string_view> lock = lock_key_of(key, suffix);
    if (!lock || !lock->starts_with(prefix)) return std::nullopt;
    std::string name(lock->substr(prefix.size()));
    // One name a line, as it is: a name with a control character (a newline would make it two;
    // C1 ones drive terminals) or bytes that are not UTF-8 could only be shown escaped, which is
    // no name to complete, so it is left out.
    if (name.empty() || !is_printable(name) || ::fnmatch(pattern.c_str(), name.c_str(), 0) != 0)
        return std::nullopt;
    return name;
}

// A taker for scan_together that adds the names of `suffix` companions to `names` (guarded by
// `mutex`: the masters of a Cluster are scanned at once), up to `max`.
KeyTaker name_taker(std::set<std::string>& names, std::mutex& mutex, const std::string& prefix,
                    const std::string& pattern, std::string_view suffix, std::size_t max) {
    return [&names, &mutex, &prefix, &pattern, suffix, max](std::string&& key) {
        std::lock_guard hold(mutex);
        if (names.size() >= max) return false;
        if (std::optional<std::string> name = companion_name(key, prefix, pattern, suffix))
            names.insert(std::move(*name));
        return names.size() < max;
    };
}

std::vector<std::string> names_by_companion(Connection& conn, const std::string& prefix,
                                            const std::string& pattern, std::size_t max,
                                            std::string_view suffix) {
    std::string match = companion_match(prefix, suffix);
    std::set<std::string> names;
    std::mutex names_mutex;
    scan_keyspace(conn, [&](Connection& node) {
        scan_each(node, match, name_taker(names, names_mutex, prefix, pattern, suffix, max));
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
    std::vector<LockState> locks;
    for (ListedState& listed : listed_locks(conn, prefix, pattern, false, 0))
        locks.push_back(std::move(listed.lock));
    return locks;
}

std::vector<ListedState> listed_locks(Connection& conn, const std::string& prefix,
                                      const std::string& pattern, bool last_runs,
                                      std::size_t ledgers) {
    const std::string match = glob_escape(prefix) + pattern;
    const std::string ledger_match = companion_match(prefix, "ledger");
    std::set<std::string> found, ledger_found;
    std::mutex found_mutex;  // the masters of a Cluster are scanned at once
    scan_keyspace(conn, [&](Connection& node) {
        std::set<std::string> part;
        std::vector<std::string> matches{match};
        std::vector<KeyTaker> takes{[&part](std::string&& key) {
            part.insert(std::move(key));
            return true;
        }};
        if (ledgers > 0) {
            matches.push_back(ledger_match);
            takes.push_back(
                name_taker(ledger_found, found_mutex, prefix, pattern, "ledger", ledgers));
        }
        scan_together(node, matches, takes);
        std::lock_guard lock(found_mutex);
        found.merge(part);
    });

    // By name (the prefix is common to all), and whether a ledger names it: such a lock is
    // listed held or free.
    std::map<std::string, bool> candidates;
    for (const std::string& key : found)
        // A companion of some lock (its fence, ledger, queue, a permit, a waiter's mark...) is
        // not a lock: companion_of is the same test that refuses such a NAME (lock_name.cpp).
        if (key.starts_with(prefix) && !companion_of(key))
            candidates.emplace(key.substr(prefix.size()), false);
    log::verbose("SCAN MATCH '{}' found {} keys, {} of them lock candidates", printable(match),
                 found.size(), candidates.size());
    for (const std::string& name : ledger_found) candidates[name] = true;

    // The state of every candidate and, with `last_runs`, its last runs beside it: independent
    // reads, pipelined (over a Cluster, one pipeline per master, all at once) in batches of
    // `batch` locks, enough to amortise the round trip and small enough to keep a batch well
    // inside the command timeout. The script cache is empty after a restart or SCRIPT FLUSH:
    // run_read_only sends the bodies of a whole batch in one more write, not one per lock.
    constexpr std::size_t batch = 256;
    std::vector<ListedState> out;
    std::vector<std::pair<LockKeys, bool>> todo;
    for (const auto& [name, has_ledger] : candidates)
        todo.emplace_back(LockKeys::make(name, prefix), has_ledger);
    for (std::size_t begin = 0; begin < todo.size(); begin += batch) {
        const std::size_t end = std::min(todo.size(), begin + batch);
        std::vector<ReadCall> calls;
        for (std::size_t i = begin; i < end; ++i) {
            const LockKeys& keys = todo[i].first;
            calls.push_back({&scripts::status(), {keys.key, keys.fence, keys.info}, {}});
            if (last_runs)
                calls.push_back(
                    {&scripts::last_runs(), last_runs_keys(keys), last_runs_args(keys)});
        }
        std::vector<Reply> replies =
            run_read_only(conn, calls, BootClock::now() + conn.timeouts().command);
        std::size_t r = 0;
        for (std::size_t i = begin; i < end; ++i) {
            const auto& [keys, has_ledger] = todo[i];
            ListedState listed{lock_state_from_reply(keys, replies[r++]), std::nullopt};
            if (last_runs) listed.runs = last_runs_or_none(replies[r++], keys);
            if (listed.lock.held() || has_ledger) out.push_back(std::move(listed));
        }
    }
    return out;
}

}  // namespace redlock

// list: every lock under the prefix, found with SCAN (never KEYS, which blocks the server for the
// whole keyspace; on every master of a Redis Cluster), read in pipelined batches, shown sorted by
// name. Over a quorum, the locks one token holds on a majority of the nodes.
#include <fmt/format.h>

#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "inspect/history.hpp"
#include "inspect/inspect.hpp"
#include "inspect/lock_report.hpp"
#include "inspect/permits_report.hpp"
#include "lock/lock_state.hpp"
#include "lock/quorum.hpp"
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

// SCANs `conn` for `match`, calling `take` with each key, until the scan is complete or `take`
// says it has enough (returns false). A key may come more than once.
void scan_each(Connection& conn, const std::string& match,
               const std::function<bool(std::string&&)>& take) {
    std::string cursor = "0";
    do {
        Reply reply = conn.command({"SCAN", cursor, "MATCH", match, "COUNT", scan_count});
        const redisReply& r = check(reply, fmt::format("scanning for '{}'", match));
        if (r.type != REDIS_REPLY_ARRAY || r.elements != 2 ||
            r.element[0]->type != REDIS_REPLY_STRING || r.element[1]->type != REDIS_REPLY_ARRAY)
            throw RedisError("unexpected reply to SCAN");
        cursor.assign(r.element[0]->str, r.element[0]->len);
        const redisReply& batch = *r.element[1];
        bool more = true;
        for (std::size_t i = 0; i < batch.elements; ++i) {
            const redisReply& key = *batch.element[i];
            if (key.type != REDIS_REPLY_STRING) throw RedisError("unexpected reply to SCAN");
            more = take(std::string(key.str, key.len)) && more;
        }
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
// holds only its own slots' keys.
void scan_keyspace(Connection& conn, const std::function<void(Connection&)>& scan) {
    if (ClusterRouter* cluster = conn.cluster())
        cluster->for_each_master([&](Connection& node, const NodeAddress&) { scan(node); });
    else
        scan(conn);
}

// list --names: the names of the locks ever taken under the prefix, found by their fence
// counters (a lock's key goes with its release, the counter stays), so that a completion also
// offers free locks, for status and history. It stops at max_listed_names: a completion wants a
// quick answer, not the keyspace. A name with a control character in it is left out: one a line
// is the format, and a completion could not offer it anyway.
int list_names(Connection& conn, const InspectOptions& options) {
    const std::string& prefix = options.conn.prefix;
    // Every fence key holds its lock key, with the prefix, somewhere: `{KEY}:fence`, or
    // `{TAG}KEY:fence` for a key with a '}' (keys.hpp). The exact test follows.
    std::string match = fmt::format("*{}*:fence", glob_escape(prefix));
    std::set<std::string> names;
    scan_keyspace(conn, [&](Connection& node) {
        if (names.size() >= max_listed_names) return;
        scan_each(node, match, [&](std::string&& key) {
            if (names.size() >= max_listed_names) return false;
            std::optional<std::string_view> lock = lock_key_of(key, "fence");
            if (!lock || !lock->starts_with(prefix)) return true;
            std::string name(lock->substr(prefix.size()));
            bool control = std::any_of(name.begin(), name.end(), [](char c) {
                return static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
            });
            if (!name.empty() && !control &&
                ::fnmatch(options.pattern.c_str(), name.c_str(), 0) == 0)
                names.insert(std::move(name));
            return names.size() < max_listed_names;
        });
    });
    std::string out;
    for (const std::string& name : names) out += name + '\n';
    std::fputs(out.c_str(), stdout);
    return exit_code::ok;
}

// The permits of each permits lock (--permits N), by key.
using PermitsByKey = std::map<std::string, PermitsState>;

// The last runs of each lock (--last-runs), by key.
using RunsByKey = std::map<std::string, LastRuns>;

// "2024-05-01 12:00:03 +0200 ran, exit 0" for a table cell; "-" when none.
std::string run_cell(const std::optional<LedgerEntry>& e) {
    if (!e) return "-";
    std::string status = e->signal        ? fmt::format("signal {}", *e->signal)
                         : e->exit_status ? fmt::format("exit {}", *e->exit_status)
                                          : std::string("-");
    return fmt::format("{} {}, {}", local_time_text(e->end_ms), printable(e->outcome), status);
}

// `nodes`, for a quorum: how many nodes hold each lock ("3 of 5"), shown after the name.
void print_table(const std::vector<LockState>& locks, const PermitsByKey& permits,
                 const RunsByKey& runs, bool last_runs,
                 const std::vector<std::string>* nodes = nullptr) {
    if (locks.empty()) return;
    using Row = std::vector<std::string>;
    std::vector<Row> rows{{"NAME", "TTL", "FENCE", "HOLDER", "HELD FOR", "COMMAND"}};
    if (last_runs) rows[0].insert(rows[0].end() - 1, {"LAST RUN", "LAST OK"});
    if (nodes) rows[0].insert(rows[0].begin() + 1, "NODES");
    for (std::size_t k = 0; k < locks.size(); ++k) {
        const LockState& lock = locks[k];
        if (auto p = permits.find(lock.keys.key); p != permits.end()) {
            rows.push_back({printable(lock.keys.name), ttl_text(lock),
                            p->second.fence ? std::to_string(*p->second.fence) : "-",
                            permits_summary(p->second), "-", "-"});
        } else {
            std::string held_for = held_for_text(lock);
            rows.push_back({printable(lock.keys.name), ttl_text(lock),
                            lock.fence ? std::to_string(*lock.fence) : "-", holder_text(lock),
                            held_for.empty() ? "-" : held_for,
                            lock.holder && !lock.holder->command.empty()
                                ? printable(lock.holder->command)
                                : "-"});
        }
        // The command stays last: it is the one cell that can be long.
        if (last_runs) {
            auto r = runs.find(lock.keys.key);
            LastRuns none;
            const LastRuns& lr = r == runs.end() ? none : r->second;
            rows.back().insert(rows.back().end() - 1,
                               {run_cell(lr.last), run_cell(lr.last_success)});
        }
        if (nodes) rows.back().insert(rows.back().begin() + 1, (*nodes)[k]);
    }
    std::vector<std::size_t> width(rows[0].size(), 0);
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

// The locks held on one node under the prefix whose names match the pattern, sorted by name.
std::vector<LockState> held_locks(Connection& conn, const InspectOptions& options) {
    const std::string& prefix = options.conn.prefix;
    std::string match = glob_escape(prefix) + options.pattern;
    std::set<std::string> found;
    scan_keyspace(conn, [&](Connection& node) {
        std::set<std::string> part = scan_keys(node, match);
        found.merge(part);
    });

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
    return locks;
}

// A lock as a quorum holds it: the token on the most nodes, how many, and that token's state on
// the first node that has it (its TTL and holder info, for the table).
struct QuorumListed {
    LockState lock;
    std::size_t holding = 0;
};

// list over a quorum: every node is scanned at once, and a lock is listed when one token holds
// it on a majority of the nodes, as status decides; a partial attempt or a stale key on a
// minority is not a lock anyone holds. Too few nodes answering to tell is 69.
int list_quorum(const InspectOptions& options) {
    QuorumLock quorum(options.conn.quorum, quorum_timeouts(options.conn), ReplicaPolicy{});
    const std::size_t n = quorum.size(), need = quorum.majority();
    std::vector<std::vector<LockState>> per_node(n);
    std::vector<std::optional<NodeError>> errors(n);
    quorum.in_parallel([&](std::size_t i) {
        errors[i] = node_failure([&] { per_node[i] = held_locks(quorum.connection(i), options); });
    });
    std::size_t answered = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (!errors[i]) {
            ++answered;
            continue;
        }
        log::warning("list: node {} did not answer: {}", quorum.describe(i), errors[i]->message);
    }
    if (answered < need)
        throw RedisUnavailable(
            fmt::format("cannot list the locks: only {} of {} Redis nodes "
                        "answered ({} needed for a majority)",
                        answered, n, need));
    // By key (hence by name), then by token: how many nodes hold it, and its first state.
    std::map<std::string, std::map<std::string, QuorumListed>> votes;
    for (std::size_t i = 0; i < n; ++i)
        for (LockState& lock : per_node[i]) {
            QuorumListed& v = votes[lock.keys.key][lock.token];
            if (v.holding++ == 0) v.lock = std::move(lock);
        }
    std::vector<QuorumListed> held;
    for (auto& [key, tokens] : votes)
        for (auto& [token, v] : tokens)
            if (v.holding >= need) held.push_back(std::move(v));

    if (options.json) {
        JsonWriter json;
        json.begin_array();
        for (const QuorumListed& v : held) {
            json.begin_object();
            json.key("name").value(v.lock.keys.name);
            json.key("key").value(v.lock.keys.key);
            json.key("nodes").value(static_cast<long long>(n));
            json.key("majority").value(static_cast<long long>(need));
            json.key("answered").value(static_cast<long long>(answered));
            json.key("holding").value(static_cast<long long>(v.holding));
            json.key("lock");
            write_lock_json(json, v.lock);
            json.end_object();
        }
        json.end_array();
        std::fputs((json.str() + "\n").c_str(), stdout);
        return exit_code::ok;
    }
    std::vector<LockState> locks;
    std::vector<std::string> nodes;
    for (QuorumListed& v : held) {
        nodes.push_back(fmt::format("{} of {}", v.holding, n));
        locks.push_back(std::move(v.lock));
    }
    print_table(locks, {}, {}, false, &nodes);
    return exit_code::ok;
}

}  // namespace

int list_command(const InspectOptions& options) {
    log::set_verbose(options.conn.verbose);
    if (!options.conn.quorum.empty()) {
        // The completions ask one node for names (they pass only the first -u).
        if (options.names)
            throw UsageError("list --names reads one Redis: give one -u URL, not a quorum");
        return list_quorum(options);
    }
    Connection conn(options.conn.endpoint, options.conn.timeouts);
    if (options.names) return list_names(conn, options);
    std::vector<LockState> locks = held_locks(conn, options);
    // A permits lock's key holds only the record of N: its holders are read apart, one round
    // trip per such lock.
    PermitsByKey permits;
    for (const LockState& lock : locks)
        if (permits_of(lock.token))
            permits.emplace(lock.keys.key, read_permits(conn, lock.keys));
        else if (lock.token == shared_marker)
            permits.emplace(lock.keys.key, read_shared(conn, lock.keys));
    // --last-runs: one more round trip per lock, which is why it is asked for.
    RunsByKey runs;
    if (options.last_runs)
        for (const LockState& lock : locks)
            runs.emplace(lock.keys.key, last_runs_or_none(conn, lock.keys));

    if (options.json) {
        JsonWriter json;
        json.begin_array();
        for (const LockState& lock : locks) {
            auto r = runs.find(lock.keys.key);
            const LastRuns* lr = r == runs.end() ? nullptr : &r->second;
            if (auto p = permits.find(lock.keys.key); p != permits.end())
                write_permits_json(json, lock, p->second);
            else
                write_lock_json(json, lock, lr);
        }
        json.end_array();
        std::fputs((json.str() + "\n").c_str(), stdout);
    } else {
        print_table(locks, permits, runs, options.last_runs);
    }
    return exit_code::ok;
}

}  // namespace redlock

// list: every lock under the prefix, found with SCAN (never KEYS, which blocks the server for the
// whole keyspace; on every master of a Redis Cluster), read in pipelined batches, shown sorted by
// name. Over a quorum, the locks one token holds on a majority of the nodes.
#include <fmt/format.h>

#include <cstdio>
#include <map>
#include <set>

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

// Keys SCAN looks at per call: large enough to make few round trips, small enough that each call
// stays short for the server.
constexpr const char* scan_count = "1000";

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

// `nodes`, for a quorum: how many nodes hold each lock ("3 of 5"), shown after the name.
void print_table(const std::vector<LockState>& locks, const PermitsByKey& permits,
                 const std::vector<std::string>* nodes = nullptr) {
    if (locks.empty()) return;
    using Row = std::vector<std::string>;
    std::vector<Row> rows{{"NAME", "TTL", "FENCE", "HOLDER", "HELD FOR", "COMMAND"}};
    if (nodes) rows[0].insert(rows[0].begin() + 1, "NODES");
    for (std::size_t k = 0; k < locks.size(); ++k) {
        const LockState& lock = locks[k];
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
    print_table(locks, {}, &nodes);
    return exit_code::ok;
}

}  // namespace

int list_command(const InspectOptions& options) {
    log::set_verbose(options.conn.verbose);
    if (!options.conn.quorum.empty()) return list_quorum(options);
    Connection conn(options.conn.endpoint, options.conn.timeouts);
    std::vector<LockState> locks = held_locks(conn, options);
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

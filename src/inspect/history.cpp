// history: the lock's past runs, newest first, as a table or as JSON lines.
#include "inspect/history.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

#include "inspect/lock_report.hpp"
#include "lock/quorum.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/json.hpp"
#include "util/log.hpp"
#include "util/printable.hpp"

namespace redlock {
namespace {

std::string status_text(const LedgerEntry& e) {
    if (e.signal) return fmt::format("signal {}", *e.signal);
    if (e.exit_status) return fmt::format("exit {}", *e.exit_status);
    return "-";
}

void write_json(const LedgerEntry& e) {
    JsonWriter j;
    write_entry_json(j, e);
    std::fputs((j.str() + "\n").c_str(), stdout);
}

}  // namespace

std::vector<LedgerEntry> read_history(const InspectOptions& options, const LockKeys& keys,
                                      std::size_t limit) {
    if (options.conn.quorum.empty()) {
        Connection conn(options.conn.endpoint, options.conn.timeouts);
        conn.set_home_key(keys.key);
        return read_ledger(conn, keys, limit);
    }
    QuorumLock quorum(options.conn.quorum, quorum_timeouts(options.conn), ReplicaPolicy{});
    const std::size_t n = quorum.size();
    std::vector<std::vector<LedgerEntry>> per_node(n);
    std::vector<std::optional<NodeError>> errors(n);
    quorum.in_parallel([&](std::size_t i) {
        errors[i] =
            node_failure([&] { per_node[i] = read_ledger(quorum.connection(i), keys, limit); });
    });
    // A run wrote the same entry to every node it reached; only the node clocks differ.
    std::set<std::tuple<std::string, long long, long long, std::string, long long>> seen;
    std::vector<LedgerEntry> out;
    std::size_t answered = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (errors[i]) {
            log::warning("history of lock '{}': {}: {}", keys.key, quorum.node(i).describe(),
                         errors[i]->message);
            continue;
        }
        ++answered;
        for (LedgerEntry& e : per_node[i])
            if (seen.emplace(e.host, e.pid, e.fence, e.outcome, e.duration_ms).second)
                out.push_back(std::move(e));
    }
    if (answered == 0)
        throw RedisUnavailable(fmt::format("history of lock '{}': no node answered", keys.key));
    std::stable_sort(out.begin(), out.end(), [](const LedgerEntry& a, const LedgerEntry& b) {
        return a.end_ms > b.end_ms;
    });
    if (out.size() > limit) out.resize(limit);
    return out;
}

std::string entry_summary(const LedgerEntry& e) {
    return fmt::format("{}, {}, {}, {} on {} (pid {}, {})", local_time_text(e.end_ms), e.outcome,
                       status_text(e), format_duration(Millis(e.duration_ms)), printable(e.host),
                       e.pid, printable(e.user));
}

LastRuns last_runs_or_none(Connection& conn, const LockKeys& keys) {
    try {
        return read_last_runs(conn, keys);
    } catch (const Error& e) {
        log::verbose("could not read the ledger of lock '{}': {}", keys.key, e.what());
        return {};
    }
}

LastRuns newest_last_runs(const std::vector<LastRuns>& per_node) {
    LastRuns out;
    auto newer = [](std::optional<LedgerEntry>& best, const std::optional<LedgerEntry>& e) {
        if (e && (!best || e->end_ms > best->end_ms)) best = e;
    };
    for (const LastRuns& r : per_node) {
        newer(out.last, r.last);
        newer(out.last_success, r.last_success);
    }
    return out;
}

std::string last_runs_text(const LastRuns& runs) {
    if (!runs.last) return "";
    return fmt::format("{:<10}{}\n{:<10}{}\n", "last run:", entry_summary(*runs.last), "last ok:",
                       runs.last_success ? entry_summary(*runs.last_success)
                                         : std::string("none among the runs the ledger keeps"));
}

int history_command(const InspectOptions& options) {
    log::set_verbose(options.conn.verbose);
    LockKeys keys = LockKeys::make(options.name, options.conn.prefix);
    std::vector<LedgerEntry> entries = read_history(options, keys, options.limit);
    if (options.json) {
        for (const LedgerEntry& e : entries) write_json(e);
        return exit_code::ok;
    }
    if (entries.empty()) {
        std::fputs(fmt::format("no runs recorded for lock '{}'\n", printable(keys.key)).c_str(),
                   stdout);
        return exit_code::ok;
    }
    std::string out = fmt::format("{:<25} {:<15} {:<9} {:>9} {:>6} {:<20} {:>7} {:<10}\n", "END",
                                  "OUTCOME", "STATUS", "DURATION", "FENCE", "HOST", "PID", "USER");
    for (const LedgerEntry& e : entries)
        out += fmt::format("{:<25} {:<15} {:<9} {:>9} {:>6} {:<20} {:>7} {:<10}\n",
                           local_time_text(e.end_ms), printable(e.outcome), status_text(e),
                           format_duration(Millis(e.duration_ms)), e.fence, printable(e.host),
                           e.pid, printable(e.user));
    std::fputs(out.c_str(), stdout);
    return exit_code::ok;
}

}  // namespace redlock

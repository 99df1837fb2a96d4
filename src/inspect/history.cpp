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
    j.begin_object();
    j.key("start_ms").value(e.start_ms);
    j.key("end_ms").value(e.end_ms);
    j.key("duration_ms").value(e.duration_ms);
    j.key("outcome").value(e.outcome);
    j.key("host").value(e.host);
    j.key("pid").value(e.pid);
    j.key("user").value(e.user);
    j.key("exit_status");
    e.exit_status ? j.value(*e.exit_status) : j.null();
    j.key("signal");
    e.signal ? j.value(*e.signal) : j.null();
    j.key("fence").value(e.fence);
    if (!e.command.empty()) j.key("command").value(e.command);
    j.end_object();
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

const LedgerEntry* last_success(const std::vector<LedgerEntry>& entries) {
    for (const LedgerEntry& e : entries)
        if (e.outcome == "ran" && e.exit_status == 0) return &e;
    return nullptr;
}

void print_last_runs(Connection& conn, const LockKeys& keys) {
    std::vector<LedgerEntry> entries;
    try {
        entries = read_ledger(conn, keys, ledger_size_default);
    } catch (const Error& e) {
        log::verbose("could not read the ledger of lock '{}': {}", keys.key, e.what());
        return;
    }
    if (entries.empty()) return;
    const LedgerEntry* ok = last_success(entries);
    std::string out = fmt::format("{:<10}{}\n", "last run:", entry_summary(entries.front()));
    out += fmt::format(
        "{:<10}{}\n", "last ok:",
        ok ? entry_summary(*ok) : fmt::format("none in the last {} runs", entries.size()));
    std::fputs(out.c_str(), stdout);
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

// history: the lock's past runs, newest first, as a table or as JSON lines; the lock interface
// (lock/inspector.hpp) reads them on every topology.
#include "inspect/history.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "inspect/inspect.hpp"
#include "inspect/lock_report.hpp"
#include "lock/inspector.hpp"
#include "util/duration.hpp"
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

std::string entry_summary(const LedgerEntry& e) {
    return fmt::format("{}, {}, {}, {} on {} (pid {}, {})", local_time_text(e.end_ms),
                       printable(e.outcome), status_text(e), format_duration(Millis(e.duration_ms)),
                       printable(e.host), e.pid, printable(e.user));
}

std::string last_runs_text(const LastRuns& runs) {
    if (!runs.last && !runs.last_success) return "";
    // A last run can be missing while a success is not: the newest entry was left out (out of
    // range), or, in the quorum mode, the nodes do not agree on it.
    return fmt::format(
        "{:<10}{}\n{:<10}{}\n",
        "last run:", runs.last ? entry_summary(*runs.last) : std::string("none that can be shown"),
        "last ok:",
        runs.last_success ? entry_summary(*runs.last_success)
                          : std::string("none among the runs the ledger keeps"));
}

int history_command(const InspectOptions& options) {
    log::set_verbose(options.conn.verbose);
    return history_command(options, *make_inspector(options.conn));
}

int history_command(const InspectOptions& options, LockInspector& inspector) {
    LockKeys keys = LockKeys::make(options.name, options.conn.prefix);
    std::vector<LedgerEntry> entries = inspector.history(keys, options.limit);
    if (options.json) {
        for (const LedgerEntry& e : entries) write_json(e);
        return exit_code::ok;
    }
    if (entries.empty()) {
        std::fputs(fmt::format("no runs recorded for lock '{}'\n", printable(keys.key)).c_str(),
                   stdout);
        return exit_code::ok;
    }
    using Row = std::vector<std::string>;
    std::vector<Row> rows{{"END", "OUTCOME", "STATUS", "DURATION", "FENCE", "HOST", "PID", "USER"}};
    for (const LedgerEntry& e : entries)
        rows.push_back({local_time_text(e.end_ms), printable(e.outcome), status_text(e),
                        format_duration(Millis(e.duration_ms)), std::to_string(e.fence),
                        printable(e.host), std::to_string(e.pid), printable(e.user)});
    // The usual widths, grown to the widest cell: a fence is Redis's clock in microseconds (16
    // digits) and may reach 2^62 - 1 (19), a pid 10 digits, a host 255 bytes.
    std::vector<std::size_t> width{25, 15, 9, 9, 6, 20, 7, 10};
    const std::vector<bool> numeric{false, false, false, true, true, false, true, false};
    for (const Row& row : rows)
        for (std::size_t c = 0; c < row.size(); ++c)
            width[c] = std::max(width[c], display_width(row[c]));
    std::string out;
    for (const Row& row : rows) {
        for (std::size_t c = 0; c < row.size(); ++c) {
            std::string pad(width[c] - display_width(row[c]), ' ');
            out += numeric[c] ? pad + row[c] : row[c] + pad;
            out += c + 1 < row.size() ? ' ' : '\n';
        }
    }
    std::fputs(out.c_str(), stdout);
    return exit_code::ok;
}

}  // namespace redlock

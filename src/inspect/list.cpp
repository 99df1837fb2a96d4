// list: the locks the lock interface (lock/inspector.hpp) finds held under the prefix (with
// --last-runs, also the free ones with a ledger), sorted by name, as a table or a JSON array. Where
// several nodes decide (a quorum), each lock also says on how many nodes its token is held.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

#include "inspect/inspect.hpp"
#include "inspect/lock_report.hpp"
#include "inspect/permits_report.hpp"
#include "lock/inspector.hpp"
#include "util/exit_codes.hpp"
#include "util/log.hpp"
#include "util/printable.hpp"

namespace redlock {
namespace {

// "2024-05-01 12:00:03 +0200 ran, exit 0" for a table cell; "-" when none.
std::string run_cell(const std::optional<LedgerEntry>& e) {
    if (!e) return "-";
    std::string status = e->signal        ? fmt::format("signal {}", *e->signal)
                         : e->exit_status ? fmt::format("exit {}", *e->exit_status)
                                          : std::string("-");
    return fmt::format("{} {}, {}", local_time_text(e->end_ms), printable(e->outcome), status);
}

void print_table(const ListReport& report, bool last_runs) {
    if (report.locks.empty()) return;
    using Row = std::vector<std::string>;
    std::vector<Row> rows{{"NAME", "TTL", "FENCE", "HOLDER", "HELD FOR", "COMMAND"}};
    if (last_runs) rows[0].insert(rows[0].end() - 1, {"LAST RUN", "LAST OK"});
    if (report.agreement) rows[0].insert(rows[0].begin() + 1, "NODES");
    for (const ListedLock& listed : report.locks) {
        const LockState& lock = listed.lock;
        if (listed.holders) {
            rows.push_back({printable(lock.keys.name), ttl_text(lock),
                            listed.holders->fence ? std::to_string(*listed.holders->fence) : "-",
                            permits_summary(*listed.holders), "-", "-"});
        } else if (!lock.held()) {
            // list --last-runs shows the locks with a ledger that nobody holds now, marked so.
            rows.push_back({printable(lock.keys.name), "-",
                            lock.fence ? std::to_string(*lock.fence) : "-", "free", "-", "-"});
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
            LastRuns lr = listed.runs.value_or(LastRuns{});
            rows.back().insert(rows.back().end() - 1,
                               {run_cell(lr.last), run_cell(lr.last_success)});
        }
        // Several nodes decide: how many hold this token ("3 of 5"), after the name.
        if (report.agreement)
            rows.back().insert(rows.back().begin() + 1,
                               fmt::format("{} of {}", listed.holding, report.agreement->nodes));
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

void write_json(JsonWriter& json, const ListReport& report) {
    json.begin_array();
    for (const ListedLock& listed : report.locks) {
        const LastRuns* runs = listed.runs ? &*listed.runs : nullptr;
        if (listed.holders) {
            write_permits_json(json, listed.lock, *listed.holders);
        } else if (report.agreement) {
            // Several nodes decide: how they voted, around the lock as its first holder saw it.
            const Agreement& a = *report.agreement;
            json.begin_object();
            json.key("name").value(listed.lock.keys.name);
            json.key("key").value(listed.lock.keys.key);
            json.key("nodes").value(static_cast<long long>(a.nodes));
            json.key("majority").value(static_cast<long long>(a.majority));
            json.key("answered").value(static_cast<long long>(a.answered));
            json.key("holding").value(static_cast<long long>(listed.holding));
            json.key("lock");
            write_lock_json(json, listed.lock, runs);
            json.end_object();
        } else {
            write_lock_json(json, listed.lock, runs);
        }
    }
    json.end_array();
}

}  // namespace

int list_command(const InspectOptions& options) {
    log::set_verbose(options.conn.verbose);
    return list_command(options, *make_inspector(options.conn));
}

int list_command(const InspectOptions& options, LockInspector& inspector) {
    if (options.names) {
        std::string out;
        for (const std::string& name :
             inspector.names(options.conn.prefix, options.pattern, max_listed_names))
            out += name + '\n';
        std::fputs(out.c_str(), stdout);
        return exit_code::ok;
    }
    ListReport report = inspector.list(options.conn.prefix, options.pattern, options.last_runs);
    if (options.json) {
        JsonWriter json;
        write_json(json, report);
        std::fputs((json.str() + "\n").c_str(), stdout);
    } else {
        print_table(report, options.last_runs);
    }
    return exit_code::ok;
}

}  // namespace redlock

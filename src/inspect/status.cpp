// status: is the lock held, and by whom. Exit 0 held, 1 free, so scripts can branch on it the way
// they do on `systemctl is-active`. What the lock interface (lock/inspector.hpp) reports is shown
// as it comes: the holders of a permits or shared lock, each node's reading where several nodes
// decide, else the one lock.
#include <fmt/format.h>

#include <cstdio>

#include "inspect/history.hpp"
#include "inspect/inspect.hpp"
#include "inspect/lock_report.hpp"
#include "inspect/permits_report.hpp"
#include "lock/inspector.hpp"
#include "util/exit_codes.hpp"
#include "util/log.hpp"
#include "util/printable.hpp"

namespace redlock {
namespace {

// "held, token 3f2a9c1e..., ttl left 28.5s, fence 7", "free, fence 7", "unreachable (...)".
std::string node_line(const NodeReading& n, bool verbose) {
    if (!n.lock) return fmt::format("unreachable ({})", printable(n.error));
    const LockState& l = *n.lock;
    std::string fence = l.fence ? std::to_string(*l.fence) : std::string("-");
    if (!l.held()) return fmt::format("free, fence {}", fence);
    return fmt::format("held, token {}, ttl left {}, fence {}", shown_token(l.token, verbose),
                       ttl_text(l), fence);
}

void write_json(JsonWriter& json, const LockReport& report) {
    if (report.holders)
        return write_permits_json(json, report.lock, *report.holders, &report.waiters);
    if (!report.agreement) return write_lock_json(json, report.lock, &report.runs, &report.waiters);
    const Agreement& a = *report.agreement;
    // One schema for every topology: the top level is a single node's object for the lock as the
    // majority holds it (its holder, ttl_ms and fence, which scripts read with jq whatever the
    // -u), and the votes and each node's answer are beside it.
    json.begin_object();
    write_lock_fields(json, report.lock);
    write_last_runs_json(json, report.runs);
    write_waiters_json(json, report.waiters);
    json.key("nodes").value(static_cast<long long>(a.nodes));
    json.key("majority").value(static_cast<long long>(a.majority));
    json.key("answered").value(static_cast<long long>(a.answered));
    json.key("holding").value(static_cast<long long>(report.holding));
    json.key("waiters_from");
    if (report.waiters_from.empty())
        json.null();
    else
        json.value(report.waiters_from);
    json.key("per_node").begin_array();
    for (const NodeReading& node : report.per_node) {
        json.begin_object();
        json.key("endpoint").value(node.endpoint);
        if (!node.lock) {
            json.key("error").value(node.error);
        } else {
            json.key("lock");
            write_lock_json(json, *node.lock);
        }
        json.end_object();
    }
    json.end_array();
    json.end_object();
}

std::string text(const LockReport& report, bool verbose) {
    if (report.holders)
        return permits_status_text(report.lock, *report.holders, verbose) +
               waiters_text(report.waiters, report.waiters_from);
    const LockState& lock = report.lock;
    std::string out;
    auto line = [&](std::string_view label, const std::string& value) {
        out += fmt::format("{:<10}{}\n", fmt::format("{}:", label), value);
    };
    line("name", printable(lock.keys.name));
    line("key", printable(lock.keys.key));
    if (report.agreement) {
        // Several nodes decide: how they voted, then what each one holds.
        const Agreement& a = *report.agreement;
        if (report.held)
            line("state", fmt::format("held by a majority ({} of {} nodes, {} needed; {} answered)",
                                      report.holding, a.nodes, a.majority, a.answered));
        else if (report.holding > 0)
            line("state", fmt::format("not held by a majority (at most {} of {} nodes hold one "
                                      "token, {} needed; {} answered)",
                                      report.holding, a.nodes, a.majority, a.answered));
        else
            line("state", fmt::format("free ({} of {} nodes answered)", a.answered, a.nodes));
        if (report.held) line("token", shown_token(lock.token, verbose));
        for (const NodeReading& node : report.per_node)
            out += fmt::format("node {}: {}\n", printable(node.endpoint), node_line(node, verbose));
        return out + waiters_text(report.waiters, report.waiters_from) +
               last_runs_text(report.runs);
    }
    line("state", lock.held() ? "held" : "free");
    if (lock.held()) {
        if (lock.holder) {
            line("holder", holder_text(lock));
            line("command", lock.holder->command.empty()
                                ? std::string("(not recorded: the holder ran without --hold-info)")
                                : printable(lock.holder->command));
            if (lock.holder->acquired_ms > 0)
                line("acquired",
                     fmt::format("{} ({} ago)", local_time_text(lock.holder->acquired_ms),
                                 held_for_text(lock)));
        } else {
            // Another client's lock (redis-py, Redisson, a hand-made SET NX), or redlock-run
            // without --hold-info: nothing records who holds it.
            line("holder", "unknown (no holder info recorded for the current token)");
        }
        line("ttl left", ttl_text(lock));
    }
    line("fence", lock.fence ? std::to_string(*lock.fence) : std::string("-"));
    if (lock.held()) line("token", shown_token(lock.token, verbose));
    return out + waiters_text(report.waiters, report.waiters_from) + last_runs_text(report.runs);
}

}  // namespace

int status_command(const InspectOptions& options) {
    log::set_verbose(options.conn.verbose);
    return status_command(options, *make_inspector(options.conn));
}

int status_command(const InspectOptions& options, LockInspector& inspector) {
    LockReport report = inspector.status(LockKeys::make(options.name, options.conn.prefix));
    if (options.json) {
        JsonWriter json;
        write_json(json, report);
        std::fputs((json.str() + "\n").c_str(), stdout);
    } else {
        std::fputs(text(report, options.conn.verbose).c_str(), stdout);
    }
    return report.held ? exit_code::ok : exit_code::lock_free;
}

}  // namespace redlock

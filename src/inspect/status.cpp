// status: is the lock held, and by whom. Exit 0 held, 1 free, so scripts can branch on it the way
// they do on `systemctl is-active`.
#include <fmt/format.h>

#include <cstdio>

#include "inspect/history.hpp"
#include "inspect/inspect.hpp"
#include "inspect/lock_report.hpp"
#include "inspect/permits_report.hpp"
#include "inspect/quorum_inspect.hpp"
#include "lock/eviction_check.hpp"
#include "lock/lock_state.hpp"
#include "util/exit_codes.hpp"
#include "util/log.hpp"
#include "util/printable.hpp"

namespace redlock {
namespace {

void print_text(const LockState& lock, bool verbose) {
    std::string out;
    auto line = [&](std::string_view label, const std::string& value) {
        out += fmt::format("{:<10}{}\n", fmt::format("{}:", label), value);
    };
    line("name", printable(lock.keys.name));
    line("key", printable(lock.keys.key));
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
    std::fputs(out.c_str(), stdout);
}

}  // namespace

int status_command(const InspectOptions& options) {
    if (!options.conn.quorum.empty()) return quorum_status_command(options);
    log::set_verbose(options.conn.verbose);
    Connection conn(options.conn.endpoint, options.conn.timeouts);
    LockState lock = read_lock_state(conn, LockKeys::make(options.name, options.conn.prefix));
    // After the read, so an unreachable server costs one timeout, not two; stderr only, so
    // --json output stays clean.
    warn_if_evicting(conn);
    if (lock.held() && (permits_of(lock.token) || lock.token == shared_marker)) {
        // --permits N: the key holds only the record of N; the holders are the permits.
        // --shared: the key holds only a marker; the holders are listed apart.
        PermitsState permits = permits_of(lock.token) ? read_permits(conn, lock.keys)
                                                      : read_shared(conn, lock.keys);
        if (options.json) {
            JsonWriter json;
            write_permits_json(json, lock, permits);
            std::fputs((json.str() + "\n").c_str(), stdout);
        } else {
            std::fputs(permits_status_text(lock, permits, options.conn.verbose).c_str(), stdout);
        }
        return permits.holders.empty() ? exit_code::lock_free : exit_code::ok;
    }
    LastRuns runs = last_runs_or_none(conn, lock.keys);
    if (options.json) {
        JsonWriter json;
        write_lock_json(json, lock, &runs);
        std::fputs((json.str() + "\n").c_str(), stdout);
    } else {
        print_text(lock, options.conn.verbose);
        std::fputs(last_runs_text(runs).c_str(), stdout);
    }
    return lock.held() ? exit_code::ok : exit_code::lock_free;
}

}  // namespace redlock

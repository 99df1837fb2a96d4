// The operator commands: status, list and release, for seeing and fixing locks by hand without
// redis-cli. Each returns the process exit status; failures are thrown as Error.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "lock/quorum/options.hpp"

namespace redlock {

class LockInspector;

// The operator commands (status, list, release): which lock or locks, and how to report.
struct InspectOptions {
    ConnectionOptions conn;
    std::string name;           // status, release
    std::string pattern = "*";  // list: a Redis glob over lock names (the prefix is not part of it)
    bool json = false;          // status, list
    bool last_runs = false;     // list --last-runs: each lock's last run and last success
    bool names = false;         // list --names: only the names, of locks held or not
    std::optional<std::string> token;  // release --token: compare-and-delete
    bool force = false;                // release --force
    std::size_t limit = 20;            // history --limit
};

// Exit 0 when the lock is held, 1 (exit_code::lock_free) when it is free.
int status_command(const InspectOptions& options);

// Every lock under the prefix whose name matches the pattern, sorted by name. Exit 0.
// With --names: the names of the locks ever taken (found by their fence counters, which never
// expire), one a line, at most max_listed_names of them.
int list_command(const InspectOptions& options);
inline constexpr std::size_t max_listed_names = 1000;

// release --token T or --force. Exit 0 when released or already free; --token T while another
// token holds the lock throws NotOwner (exit 1).
int release_command(const InspectOptions& options);

// The lock's run ledger, newest first, as a table or JSON lines. Exit 0.
int history_command(const InspectOptions& options);

// The same on a given inspector (the ones above use make_inspector(options.conn)): what a unit
// test plugs a fake into, to see how a report is shown.
int status_command(const InspectOptions& options, LockInspector& inspector);
int list_command(const InspectOptions& options, LockInspector& inspector);
int release_command(const InspectOptions& options, LockInspector& inspector);
int history_command(const InspectOptions& options, LockInspector& inspector);

}  // namespace redlock

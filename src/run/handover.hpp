// The hand-over: when redlock-run dies while its command runs (kill -9, a crash), its watchdog
// (run/watchdog.cpp) kills the command's process group and then executes redlock-run again as
// `rl-handover`, which records the run in the ledger as killed and releases the lock with the
// run's token, so that the next run need not wait for the TTL. What it needs travels in a sealed
// memory file the watchdog inherits (handover_file): the token and the password are secrets, and
// argv and the environment of a process are visible to others (ps, /proc/<pid>/environ).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "run/run.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"

namespace redlock {

class LockBackend;

// The name the watchdog gives the hand-over process (its argv is this word alone), by which
// main() knows it.
inline constexpr std::string_view handover_program = "rl-handover";
// The longest a hand-over may take, however slow or dead the Redis servers are: it then exits
// and the lock expires by itself.
inline constexpr Millis handover_bound{5'000};

// What the hand-over reads: redlock-run's command line and environment as it started (before it
// scrubbed the password variables), from which it builds the same options and so reaches the
// same lock on the same topology; and what only the run knew.
struct HandoverState {
    std::vector<std::string> argv;
    std::vector<std::string> env;  // "NAME=value"
    std::string token;
    long long fence = 0;
    long long supervisor_pid = 0;       // the run's pid, for the ledger entry
    std::int64_t acquired_boot_ns = 0;  // CLOCK_BOOTTIME when the lock was taken
    std::int64_t started_unix_ms = 0;   // when the command started, for --metrics-file
    std::optional<long long> slot;      // --once-per: the run's slot
};

std::string encode_handover(const HandoverState& state);
// Throws DataError for anything that encode_handover did not write.
HandoverState decode_handover(std::string_view stored);

// Called by main() before anything reads or scrubs the environment: the command line and the
// environment a hand-over will need. Without it (the unit tests) a run has no hand-over; an
// empty `argv` forgets what was remembered.
void remember_invocation(std::vector<std::string> argv, char** envp);

// The memory file for a run that took the lock: sealed, close-on-exec, at fd 10 or above. An
// empty Fd when no invocation was remembered or the file cannot be made (the run then goes on
// without a hand-over: its lock expires by itself if it dies).
Fd handover_file(const std::string& token, long long fence, std::optional<long long> slot,
                 Deadline acquired, std::chrono::system_clock::time_point started);
// Reads the whole file at `fd`. Throws DataError or Error.
HandoverState read_handover(int fd);

// Whether a process of process group `group` is alive (a zombie is not: it runs nothing and
// holds no file or lock), by /proc.
bool group_alive(long group);

// The hand-over itself, on the options main() parsed from `state.argv`, once the watchdog sent
// SIGKILL to the command's process group `group`: waits until no process of it is alive (a
// killed process runs on until the kernel gets round to it, and one in an uninterruptible wait
// finishes it first), then records the run as killed and releases the lock (LockBackend::finish,
// so permits and shared holds give back their own), then --metrics-file. Returns the exit code;
// messages go to stderr. The caller bounds it in time (handover_bound).
int hand_over(const RunOptions& options, const HandoverState& state, long group);
// The same on a backend the caller built (the unit tests' fake), which stands for the lock
// `options` names.
int hand_over(const RunOptions& options, const HandoverState& state, long group, LockBackend& lock);

}  // namespace redlock

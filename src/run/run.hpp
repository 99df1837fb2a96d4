// The run action: take the lock, run the command under it, keep the lock alive, stop the command
// if the lock is lost, release, and report the command's status.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lock/node/replicas.hpp"
#include "lock/quorum/options.hpp"
#include "run/job_options.hpp"
#include "util/clock.hpp"

namespace redlock {

class LockBackend;
class Pinger;

enum class OnLost { term, kill, ignore };

struct RunOptions {
    ConnectionOptions conn;
    std::string name;
    Millis ttl{30'000};
    Millis renew_every{10'000};
    std::optional<Millis> wait;  // nullopt: do not wait; Millis::max(): wait forever
    int conflict_exit_code = 75;
    bool quiet = false;
    std::vector<std::string> command;  // already wrapped in /bin/sh -c for --shell
    OnLost on_lost = OnLost::term;
    Millis kill_after{10'000};
    std::optional<Millis> min_hold;  // keep the lock at least this long after taking it
    // --restart-guard: how long a node that lost the lock's data holds it back (nullopt: ttl).
    std::optional<Millis> restart_guard;
    std::optional<Millis> max_runtime;  // stop the command after this long (exit 124)
    bool syslog = false;                // messages also go to syslog
    bool hold_info = false;             // record the command line too (host, pid, user always)
    ReplicaPolicy replicas;             // --min-replicas, --replica-timeout: WAIT after writes
    bool keep_env = false;              // the command inherits the password variables too
    int permits = 1;                    // --permits: up to this many holders at once
    bool shared = false;                // --shared: a shared holder, beside other shared ones
    JobOptions job;                     // once-per slots, ledger, metrics, stuck detection
};

// Returns the process exit status; throws Error for failures before the command started.
int run_command(const RunOptions& options);
// The same on a backend the caller built, after what run_command(options) does first (logging,
// the environment scrub, the reentrancy check): the seam where the unit tests plug in a fake
// (tests/unit/run/fake_backend.hpp). `lock` stands for whatever `options.conn`, `replicas`,
// `permits` and `shared` would have built; its keys name the lock. `clock` measures every
// deadline of the supervisor and its renewer (tests/unit/fake_clock.hpp: virtual time). `pinger`
// sends --ping's pings (run/ping.hpp); none: the run sends none.
int run_command(const RunOptions& options, LockBackend& lock, Clock& clock = boot_clock(),
                Pinger* pinger = nullptr);

}  // namespace redlock

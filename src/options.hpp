// What the command line asked for, after validation: plain values, no parsing left to do.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "clock.hpp"
#include "connection.hpp"
#include "redis_url.hpp"
#include "replicas.hpp"

namespace redlock {

struct ConnectionOptions {
    Endpoint endpoint;
    Timeouts timeouts;
    std::string prefix;
    bool verbose = false;
    // Redlock quorum mode: every node when -u names three or more (endpoint is then the first);
    // empty in the single-node mode.
    std::vector<Endpoint> quorum;
    Millis node_timeout{50};  // --node-timeout: each quorum node's connect and command bound
};

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
    std::optional<Millis> min_hold;     // keep the lock at least this long after taking it
    std::optional<Millis> max_runtime;  // stop the command after this long (exit 124)
    bool syslog = false;                // messages also go to syslog
    bool hold_info = false;             // record host, pid, user, command beside the lock
    ReplicaPolicy replicas;             // --min-replicas, --replica-timeout: WAIT after writes
    bool keep_env = false;              // the command inherits the password variables too
};

// The operator commands (status, list, release): which lock or locks, and how to report.
struct InspectOptions {
    ConnectionOptions conn;
    std::string name;           // status, release
    std::string pattern = "*";  // list: a Redis glob over lock names (the prefix is not part of it)
    bool json = false;          // status, list
    std::optional<std::string> token;  // release --token: compare-and-delete
    bool force = false;                // release --force
};

}  // namespace redlock

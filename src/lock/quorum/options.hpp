// Where the lock lives and how to reach it, as the command line asked: shared by the run and the
// operator commands, after validation (plain values, no parsing left to do).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "lock/node/replicas.hpp"
#include "redis/connection.hpp"
#include "redis/redis_url.hpp"
#include "util/clock.hpp"

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
    // Whether --node-timeout (or REDLOCK_NODE_TIMEOUT) was given: if not, a run raises the
    // default to follow the round trip it measures to a distant node (QuorumLock::follow).
    bool node_timeout_given = false;
};

}  // namespace redlock

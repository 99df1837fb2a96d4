// What the command line asked for, after validation: plain values, no parsing left to do.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "clock.hpp"
#include "connection.hpp"
#include "redis_url.hpp"

namespace redlock {

struct ConnectionOptions {
    Endpoint endpoint;
    Timeouts timeouts;
    std::string prefix;
    bool verbose = false;
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
};

}  // namespace redlock

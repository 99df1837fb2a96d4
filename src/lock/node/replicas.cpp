#include "lock/node/replicas.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "lock/node/lock.hpp"
#include "util/duration.hpp"
#include "util/log.hpp"

namespace redlock {

void confirm_replicated(Connection& conn, const ReplicaPolicy& policy, std::string_view what,
                        Deadline cap) {
    Deadline start = BootClock::now();
    // The server answers after at most policy.timeout; the command timeout covers the trip.
    Deadline deadline = std::min(cap, start + policy.timeout + conn.timeouts().command);
    Reply reply = conn.command(
        {"WAIT", std::to_string(policy.min_replicas), std::to_string(policy.timeout.count())},
        deadline);
    // Any integer: one below --min-replicas (a negative one from a broken server too) is too few.
    long long acknowledged =
        check(reply, fmt::format("waiting for replicas to acknowledge {}", what))
            .as_int(LLONG_MIN, LLONG_MAX, "unexpected reply type from WAIT");
    if (acknowledged >= policy.min_replicas) {
        log::verbose("{} replica(s) acknowledged {} in {}", acknowledged, what,
                     format_duration(std::chrono::duration_cast<Millis>(BootClock::now() - start)));
        return;
    }
    throw TooFewReplicas(fmt::format(
        "only {} of the {} replica(s) that --min-replicas asks for acknowledged {} on {} within "
        "{} (--replica-timeout)",
        acknowledged, policy.min_replicas, what, conn.endpoint().describe(),
        format_duration(policy.timeout)));
}

void confirm_acquired(LockNode& node, const LockKeys& keys, const std::string& token,
                      const ReplicaPolicy& policy) {
    try {
        confirm_replicated(node.connection(), policy,
                           fmt::format("the acquire of lock '{}'", keys.key), Deadline::max());
    } catch (const RedisUnavailable& e) {
        std::string outcome = "released it";
        try {
            node.release(keys, token);
        } catch (const Error& release_error) {
            outcome = fmt::format("could not release it ({}), it expires by itself",
                                  release_error.what());
        }
        throw RedisUnavailable(
            fmt::format("{}; {} and did not run the command", e.what(), outcome));
    }
}

}  // namespace redlock

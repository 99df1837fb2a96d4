// --min-replicas: after taking and after renewing a lock, WAIT until that many replicas have the
// write, so that a failover to one of them keeps the lock. WAIT makes the write more durable, not
// Redis strongly consistent: a failover may still promote a replica that did not acknowledge.
#pragma once

#include <string>
#include <string_view>

#include "lock/node/keys.hpp"
#include "redis/connection.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"

namespace redlock {

class LockNode;

struct ReplicaPolicy {
    int min_replicas = 0;  // 0: do not WAIT
    Millis timeout{100};   // WAIT's own timeout: how long the master may wait for the acks
    bool enabled() const { return min_replicas > 0; }
};

// WAITs on `conn` for the writes it has sent so far; `what` names them for the message ("the
// acquire of lock 'k'"). The round trip ends by `cap` at the latest. Throws TooFewReplicas.
void confirm_replicated(Connection& conn, const ReplicaPolicy& policy, std::string_view what,
                        Deadline cap);

// After an acquire: confirm it, or release the lock again and throw, so the command never runs
// on a lock the replicas do not have.
void confirm_acquired(LockNode& node, const LockKeys& keys, const std::string& token,
                      const ReplicaPolicy& policy);

}  // namespace redlock

#include "acquire_retry.hpp"

#include <thread>

#include "backoff.hpp"
#include "duration.hpp"
#include "errors.hpp"
#include "log.hpp"

namespace redlock {

AcquireAttempt acquire_resolving(LockNode& node, const LockKeys& keys, const std::string& token,
                                 Millis ttl, const HolderInfo* info, Queueing queueing,
                                 bool& reached) {
    Backoff backoff(Millis(50), Millis(200));
    Connection& conn = node.connection();
    for (int send = 1;; ++send) {
        conn.ensure_connected();  // failing here, nothing was sent: an ordinary error
        reached = true;
        AcquireAttempt attempt;
        attempt.sent = BootClock::now();
        try {
            attempt.result = node.acquire(keys, token, ttl, info, queueing);
            if (send > 1 && attempt.result.acquired)
                log::verbose("the lost reply had taken lock '{}' (or this send did)", keys.key);
            return attempt;
        } catch (const RedisUnavailable& e) {
            // An error reply leaves the connection open: Redis answered, nothing is unknown.
            // Connection closes it on every I/O failure, and only then may the reply be lost.
            if (conn.connected() || send >= acquire_sends) throw;
            Millis delay = backoff.next();
            log::verbose(
                "no reply to the acquire of lock '{}' ({}); it may have been taken, asking "
                "again with the same token in {}",
                keys.key, e.what(), format_duration(delay));
            std::this_thread::sleep_for(delay);
        }
    }
}

}  // namespace redlock

#include "lock/node/acquire_retry.hpp"

#include <thread>

#include "util/backoff.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {

AcquireAttempt acquire_resolving(LockNode& node, const LockKeys& keys, const std::string& token,
                                 Millis ttl, const HolderInfo* info, Queueing queueing,
                                 bool& reached) {
    Backoff backoff(Millis(50), Millis(200));
    Connection& conn = node.connection();
    for (int send = 1;; ++send) {
        // Not connected first: on a new connection the acquire goes out in the set-up's write
        // (Connection::first_command). A connect that fails before that write is an ordinary
        // error (nothing was sent), a reply lost after it a ReplyLost; and `sent` is taken before
        // the connect, which only makes the lease counted from it shorter.
        AcquireAttempt attempt;
        attempt.sent = BootClock::now();
        try {
            attempt.result = node.acquire(keys, token, ttl, info, queueing);
            // A busy answer to a waiter has queued it; an error reply has changed nothing.
            if (attempt.result.acquired || queueing == Queueing::wait) reached = true;
            if (send > 1 && attempt.result.acquired)
                log::verbose("the lost reply had taken lock '{}' (or this send did)", keys.key);
            return attempt;
        } catch (const ReplyLost& e) {
            // Only a lost reply is retried: an error reply (READONLY, a Redis Cluster redirect
            // loop, ...) is an answer, and nothing about the attempt is unknown.
            reached = true;
            if (send >= acquire_sends) throw;
            Millis delay = backoff.next();
            log::verbose(
                "no reply to the acquire of lock '{}' ({}); it may have been taken, asking "
                "again with the same token in {}",
                keys.key, e.what(), format_duration(delay));
            std::this_thread::sleep_for(delay);
            // Asked again on a fresh connection: the one that lost the reply may have stalled (a
            // middlebox that dropped it without a word). Both sends carry the same token, so
            // whichever of them runs second changes nothing.
            conn.close();
        }
    }
}

}  // namespace redlock

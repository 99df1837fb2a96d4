// An acquire whose reply never came (it timed out, or the connection dropped after the script was
// sent) may still have taken the lock: Redis ran the script and only the answer was lost. Taking
// that for "busy" or "unreachable" would leave a lock of ours that nobody releases until its TTL
// runs out. So the same acquire is sent again with the same token, which acquire.lua recognises
// as ours; and a run that gives up after such an attempt deletes the key if it holds our token
// (LockNode::abandon).
#pragma once

#include <optional>

#include <string>

#include "lock/node/lock.hpp"
#include "util/clock.hpp"

namespace redlock {

// The first send plus one re-send after a lost reply: two lost replies in a row say the server or
// the path to it is in trouble, and the run gives up (exit 69) rather than wait on it further.
inline constexpr int acquire_sends = 2;

struct AcquireAttempt {
    AcquireResult result;
    Deadline sent{};  // when the send that was answered went out: the lease starts there
    // Set when the attempt was inconclusive in a way that a short pause resolves (a quorum's
    // nodes gave different permits for a moment): the wait loop looks again after it, even a run
    // that does not wait (the target bounds how often).
    std::optional<Millis> again_after;
};

// Sends the acquire, and again with the same token while its reply is lost (jittered backoff in
// between), up to acquire_sends times; then rethrows the last error. Error replies (READONLY,
// WRONGTYPE, ...) are answers and are thrown at once. `reached` becomes true once Redis may hold
// something of ours (the lock, a place in the queue, or an unknown outcome): from then on,
// giving up must go through LockNode::abandon.
AcquireAttempt acquire_resolving(LockNode& node, const LockKeys& keys, const std::string& token,
                                 Millis ttl, const HolderInfo* info, Queueing queueing,
                                 bool& reached);

}  // namespace redlock

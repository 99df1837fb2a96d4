// The lock protocol against one Redis node: acquire (SET NX PX + fence INCR), renew
// (compare-token-then-PEXPIRE) and release (compare-and-delete). It knows nothing of processes
// or threads, so a quorum of nodes can later be built from several of these.
#pragma once

#include <string>
#include <vector>

#include "clock.hpp"
#include "connection.hpp"
#include "keys.hpp"

namespace redlock {

struct AcquireResult {
    bool acquired = false;
    long long fence = 0;          // when acquired: the fencing token
    long long holder_pttl = -1;   // when busy: the holder's remaining TTL in ms (-1: none set)
};

enum class RenewResult { renewed, not_owner };
enum class ReleaseResult { released, absent, not_owner };

class LockNode {
public:
    explicit LockNode(Connection& conn) : conn_(conn) {}

    AcquireResult acquire(const LockKeys& keys, const std::string& token, Millis ttl);
    RenewResult renew(const LockKeys& keys, const std::string& token, Millis ttl,
                      Deadline deadline);
    ReleaseResult release(const LockKeys& keys, const std::string& token);

    Connection& connection() { return conn_; }
    std::string describe() const { return conn_.endpoint().describe(); }

private:
    Connection& conn_;
};

}  // namespace redlock

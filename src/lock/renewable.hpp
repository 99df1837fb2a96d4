// What the renewer keeps alive: one node (the default mode) or a Redlock quorum of nodes. The
// renewer only asks for renewals and for the lease end a renewal proves; each kind of lock owns
// its own safety arithmetic.
#pragma once

#include <string>

#include "lock/keys.hpp"
#include "lock/lock.hpp"
#include "util/clock.hpp"

namespace redlock {

// How much earlier than Redis we treat the lease as over: room for clock-rate differences
// between this host and the Redis host (1%, as the Redlock spec's drift factor) plus a fixed
// allowance for delivering the signal to the command.
Millis lease_margin(Millis ttl);

class Renewable {
  public:
    virtual ~Renewable() = default;

    // Extends the lock; not_owner when it can no longer be ours. Throws (RedisUnavailable, ...)
    // when the outcome is unknown, which the renewer retries until the lease runs out.
    virtual RenewResult renew(const LockKeys& keys, const std::string& token, Millis ttl,
                              Deadline deadline) = 0;
    // The latest moment this host may still believe it holds the lock after an acquire or renew
    // that started at `sent` and succeeded.
    virtual Deadline lease_end(Deadline sent, Millis ttl) const = 0;
    // While set (>= 0), a readable `fd` aborts a renewal in flight (the renewer's stop signal).
    virtual void set_cancel_fd(int fd) = 0;
    // The longest a single renewal may take before it counts as failed.
    virtual Millis renew_timeout() const = 0;
    // Before each renewal: find out where the lock's node is now (Sentinel), by `cap` at most.
    virtual void follow_master(Deadline /*cap*/) {}
};

// Lease margin for one node (see lease_margin() above).
class SingleNodeLease : public Renewable {
  public:
    explicit SingleNodeLease(LockNode& node) : node_(node) {}

    RenewResult renew(const LockKeys& keys, const std::string& token, Millis ttl,
                      Deadline deadline) override {
        return node_.renew(keys, token, ttl, deadline);
    }
    Deadline lease_end(Deadline sent, Millis ttl) const override;
    void set_cancel_fd(int fd) override { node_.connection().set_cancel_fd(fd); }
    Millis renew_timeout() const override { return node_.connection().timeouts().command; }
    void follow_master(Deadline cap) override { node_.connection().follow_master(cap); }

  private:
    LockNode& node_;
};

}  // namespace redlock

// Delays between retries of a Redis command that failed for a reason that may pass (a timeout, a
// reset connection, READONLY during a failover): doubling from a floor up to a cap, each one drawn
// at random from the upper half of its step ("equal jitter"), so that the many runs that lost the
// same server do not all retry in the same millisecond when it comes back.
#pragma once

#include <random>

#include "util/clock.hpp"

namespace redlock {

class Backoff {
  public:
    // `first` is the first step, `cap` the largest; both at least 1ms.
    Backoff(Millis first, Millis cap);

    // The delay to wait before the next retry: in [step/2, step], then the step doubles.
    Millis next();
    // After a success: the next failure starts again from `first`.
    void reset() { step_ = first_; }

  private:
    Millis first_;
    Millis cap_;
    Millis step_;
    std::minstd_rand random_;
    bool seeded_ = false;
};

}  // namespace redlock

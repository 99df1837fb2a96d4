#include "util/backoff.hpp"

#include <algorithm>

namespace redlock {

Backoff::Backoff(Millis first, Millis cap)
    : first_(std::max(first, Millis(1))), cap_(std::max(cap, first_)), step_(first_) {}

Millis Backoff::next() {
    // Seeded at the first retry, not at construction: every acquire constructs a Backoff and
    // almost none retries, and std::random_device costs ~20 us here (it asks the CPU for
    // RDRAND/RDSEED with cpuid, which a hypervisor traps).
    if (!seeded_) {
        random_.seed(std::random_device{}());
        seeded_ = true;
    }
    Millis::rep half = step_.count() / 2;
    std::uniform_int_distribution<Millis::rep> pick(step_.count() - half, step_.count());
    Millis delay(pick(random_));
    step_ = std::min(step_ * 2, cap_);
    return delay;
}

}  // namespace redlock

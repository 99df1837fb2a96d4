#include "util/backoff.hpp"

#include <algorithm>

namespace redlock {

Backoff::Backoff(Millis first, Millis cap)
    : first_(std::max(first, Millis(1))),
      cap_(std::max(cap, first_)),
      step_(first_),
      random_(std::random_device{}()) {}

Millis Backoff::next() {
    Millis::rep half = step_.count() / 2;
    std::uniform_int_distribution<Millis::rep> pick(step_.count() - half, step_.count());
    Millis delay(pick(random_));
    step_ = std::min(step_ * 2, cap_);
    return delay;
}

}  // namespace redlock

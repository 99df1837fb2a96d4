// The clock for every lease deadline. CLOCK_BOOTTIME, unlike steady_clock (CLOCK_MONOTONIC), keeps
// counting while the host is suspended: a laptop or VM that sleeps past the TTL must come back
// believing its lease is gone, because Redis's clock kept running.
#pragma once

#include <chrono>
#include <ctime>

namespace redlock {

struct BootClock {
    using duration = std::chrono::nanoseconds;
    using rep = duration::rep;
    using period = duration::period;
    using time_point = std::chrono::time_point<BootClock>;
    static constexpr bool is_steady = true;

    static time_point now() noexcept {
        timespec ts{};
        clock_gettime(CLOCK_BOOTTIME, &ts);
        return time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec));
    }
};

using Millis = std::chrono::milliseconds;
using Deadline = BootClock::time_point;

// Milliseconds left until `d`, never negative; what poll(2) wants.
inline int millis_until(Deadline d) {
    auto left = std::chrono::ceil<Millis>(d - BootClock::now()).count();
    if (left <= 0) return 0;
    return left > 0x7fffffff ? 0x7fffffff : static_cast<int>(left);
}

}  // namespace redlock

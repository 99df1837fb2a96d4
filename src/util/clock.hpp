// The clock for every lease deadline. CLOCK_BOOTTIME, unlike steady_clock (CLOCK_MONOTONIC), keeps
// counting while the host is suspended: a laptop or VM that sleeps past the TTL must come back
// believing its lease is gone, because Redis's clock kept running.
#pragma once

#include <poll.h>

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

// The time a supervisor's decisions are measured on, and its one way to wait: now(), and poll(2)
// with a deadline on that same time. Run, Renewer and the waiter (lock/waiter.hpp) take one;
// everything else keeps calling BootClock directly. The product passes boot_clock(); unit tests
// pass a virtual clock (tests/unit/fake_clock.hpp) that jumps to the next deadline as soon as every
// thread that uses it waits, so "stopped before the lease ends" is proved in microseconds and
// cannot be late.
class Clock {
  public:
    virtual ~Clock() = default;
    virtual Deadline now() = 0;
    // poll(2) over `fds` until one is ready or `until` has passed (Deadline::max(): no end). As
    // poll: the number of ready descriptors, 0 at the deadline, -1 with errno (EINTR) set.
    virtual int poll(pollfd* fds, nfds_t count, Deadline until) = 0;
    // A thread other than the caller's starts (or has ended) using this clock: called by the
    // thread that starts it, before it runs, and by the thread itself as its last use. A virtual
    // clock moves only while every thread that uses it waits in poll().
    virtual void thread_started() {}
    virtual void thread_ended() {}
};

// CLOCK_BOOTTIME and the real poll(2).
Clock& boot_clock();

}  // namespace redlock

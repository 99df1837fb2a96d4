// A virtual clock for the supervisor's decisions (util/clock.hpp's Clock). Time stands still
// while any thread that uses the clock is busy, and jumps to the earliest deadline that a thread
// waits for once every one of them waits in poll() with nothing ready: a test of "the command is
// stopped before the lease ends" runs in microseconds, and no scheduling delay can make anything
// late, since nothing happens between a deadline and the decision it triggers.
//
// Descriptors are still real: poll() looks at them (without waiting) before each jump, and keeps
// looking, a millisecond at a time, while no thread has a deadline or some thread is busy. Time
// never jumps past a real event that has already happened, but it does not wait for one that is
// still to come (a command's exit after a signal): a test states what the supervisor decided and
// when, in virtual time, not how fast a real process reacted, and stops time (stop_at) where the
// last decision it checks falls.
#pragma once

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

#include "util/clock.hpp"

namespace redlock::fake {

class Clock final : public redlock::Clock {
  public:
    // `threads`: how many threads use the clock before any thread_started(): 1 when the test's
    // own thread runs the code under test (run_command), 0 when it only watches (a Renewer).
    // Virtual time starts an hour after the real boot time, so that a deadline handed to a real
    // process (the watchdog) lies far beyond anything the test does.
    explicit Clock(int threads = 1) : threads_(threads) {}

    Deadline now() override {
        std::lock_guard g(mutex_);
        return now_;
    }

    int poll(pollfd* fds, nfds_t count, Deadline until) override {
        std::unique_lock g(mutex_);
        for (;;) {
            g.unlock();
            int ready = ::poll(fds, count, 0);
            g.lock();
            if (ready != 0) return ready;
            if (now_ >= until) return 0;
            auto waiting = waits_.insert(until);
            // The earliest deadline, unless a thread is busy, or that deadline has come and its
            // thread has yet to see it.
            Deadline next = std::min(*waits_.begin(), horizon_);
            if (static_cast<int>(waits_.size()) >= threads_ && next != Deadline::max() &&
                next > now_) {
                now_ = next;
                ++jumps_;
                changed_.notify_all();
            } else {
                changed_.wait_for(g, std::chrono::milliseconds(1));
            }
            waits_.erase(waiting);
        }
    }

    void thread_started() override {
        std::lock_guard g(mutex_);
        ++threads_;
    }
    void thread_ended() override {
        std::lock_guard g(mutex_);
        --threads_;
        changed_.notify_all();
    }

    // Time never jumps past `t`: once there, it stands still, and the threads wait for real
    // events alone (a killed command's exit), so that what happens next is stamped `t` exactly
    // rather than at whatever deadline a thread that is still running (the renewer) waits for.
    void stop_at(Deadline t) {
        std::lock_guard g(mutex_);
        horizon_ = t;
    }

    // Moves time on by hand, as a test that drives the code itself does.
    void advance(Millis by) {
        std::lock_guard g(mutex_);
        now_ += by;
        changed_.notify_all();
    }
    // How often time jumped to a waiter's deadline.
    long jumps() const {
        std::lock_guard g(mutex_);
        return jumps_;
    }

  private:
    mutable std::mutex mutex_;
    std::condition_variable changed_;
    Deadline now_ = BootClock::now() + std::chrono::hours(1);
    int threads_;
    std::multiset<Deadline> waits_;
    Deadline horizon_ = Deadline::max();
    long jumps_ = 0;
};

}  // namespace redlock::fake

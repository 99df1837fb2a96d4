// What a waiting run knows about the lock it waits for (--wait), handed to whoever shows it (the
// run's live status line, run/wait_line.hpp): the lock layer never prints it itself.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "lock/node/results.hpp"
#include "util/clock.hpp"

namespace redlock {

struct WaitProgress {
    std::string key;
    Millis waited{0};
    std::optional<Millis> left;  // nullopt: --wait without a bound
    AcquireResult busy;          // the holder (info when recorded) and its remaining TTL
    long long place = 0;         // 1-based place in the waiters' queue; 0: not known
    int permits = 1;             // --permits N > 1: busy.holder_pttl is the first to end
};

using WaitProgressFn = std::function<void(const WaitProgress&)>;

// How often a waiter refreshes what it shows, at most.
inline constexpr Millis wait_progress_every{1'000};

// What a waiter last saw, and its extrapolation to now: the holder's age and TTL move on between
// two reads without another read.
class WaitView {
  public:
    // `clock`: the one `start` and `give_up` are on (the waiter's).
    WaitView(const WaitProgressFn& fn, std::string key, Deadline start, Deadline give_up,
             int permits = 1, Clock& clock = boot_clock())
        : fn_(fn),
          key_(std::move(key)),
          start_(start),
          give_up_(give_up),
          permits_(permits),
          clock_(clock) {}

    bool enabled() const { return static_cast<bool>(fn_); }
    // A new reading: the holder as an attempt or a read found it, and the place when known.
    void saw(const AcquireResult& busy, std::optional<long long> place = std::nullopt);
    // Hands the latest reading, moved on to now, to the callback.
    void show();
    // Whether wait_progress_every has passed since the last show().
    bool due() const { return clock_.now() - shown_ >= wait_progress_every; }
    // Whether the last reading was the restart guard holding a free lock back: a status read
    // (wait_status.lua) would see only a free lock, so the waiter counts down what it has.
    bool held_back() const { return busy_.restart_uptime_s.has_value(); }

  private:
    const WaitProgressFn& fn_;
    std::string key_;
    Deadline start_;
    Deadline give_up_;
    int permits_;
    Clock& clock_;
    AcquireResult busy_;
    long long place_ = 0;
    Deadline read_at_{};
    Deadline shown_{};
};

}  // namespace redlock

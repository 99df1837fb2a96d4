// Keeps a held lock alive from a background thread and tracks how long this host can prove it
// still holds it. The main loop owns the decision that the lock is lost: it compares the clock
// with valid_until() and watches event_fd() for the renewer's "token gone" report, so a starved
// or stuck renewer thread can only make us give up early, never late.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "lock/backend.hpp"
#include "lock/node/keys.hpp"
#include "lock/node/lock.hpp"
#include "util/clock.hpp"
#include "util/fd.hpp"

namespace redlock {

class Renewer {
  public:
    // `lease_start` is when the acquire (or last renew) command was sent: Redis started the TTL
    // no earlier than that, so counting from it errs on the safe side. `lock` decides how long a
    // renewal proves the lock is ours (LockBackend::lease_end). `clock` times the renewals.
    // `first_lease` > 0: the lease from lease_start is that long, not the TTL (a lock a release
    // handed over for its claim window, waiter.hpp), and the first renewal is due a quarter of
    // it after lease_start (at once when that has passed): a command that ends sooner (many do)
    // pays no renewal, nor the reconnect of one aborted at its end, and the renewal still has
    // half the claim window to answer before the supervisor's stop (Run::term_lead).
    Renewer(LockBackend& lock, LockKeys keys, std::string token, Millis ttl, Millis every,
            Deadline lease_start, Clock& clock = boot_clock(), Millis first_lease = Millis(0));
    ~Renewer();
    Renewer(const Renewer&) = delete;
    Renewer& operator=(const Renewer&) = delete;

    // Called on the renewer thread each time a renewal moved valid_until(), with the new value:
    // the watchdog enforces the same lease end as the main loop.
    void set_on_extended(std::function<void(Deadline)> on_extended) {
        on_extended_ = std::move(on_extended);
    }

    // When the first renewal is due. Run starts the thread then rather than with the command:
    // a command that ends sooner (many do) never pays for creating and joining a thread.
    Deadline first_renewal() const {
        return lease_start_ +
               (first_lease_ > Millis(0) ? std::min(every_, first_lease_ / 4) : every_);
    }
    // Whether a renewal has succeeded yet.
    bool renewed() const { return renewed_.load(); }
    bool started() const { return thread_.joinable(); }
    void start();
    // Stops and joins the thread; aborts an in-flight renewal at once. Idempotent.
    void stop();

    // Readable once the renewer has seen that the key no longer holds our token.
    int event_fd() const { return event_.get(); }
    Deadline valid_until() const { return Deadline(BootClock::duration(valid_until_ns_.load())); }
    std::string lost_reason() const;
    // Why the latest renewal attempt failed ("" after a success), for the lost-lock message.
    std::string last_failure() const;

  private:
    void run();
    void report_lost(std::string reason);

    LockBackend& lock_;
    Clock& clock_;
    LockKeys keys_;
    std::string token_;
    Millis ttl_;
    Millis every_;
    Deadline lease_start_;
    Millis first_lease_;
    std::atomic<bool> renewed_{false};
    std::atomic<BootClock::rep> valid_until_ns_;
    Fd cancel_;
    Fd event_;
    mutable std::mutex mutex_;
    std::string lost_reason_;
    std::string last_failure_;
    std::function<void(Deadline)> on_extended_;
    std::thread thread_;
};

}  // namespace redlock

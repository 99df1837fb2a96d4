// A LockBackend with no Redis behind it, for unit tests of what sits above the interface (the
// run's supervisor, the renewer), as ninja tests its builder against a VirtualFileSystem instead
// of the disk: each test scripts the answers (acquired, busy, slot done, unreachable; renewed,
// not ours, unreachable, slow) and reads back every call with its arguments and the time it
// came in. Real servers stay the rule for the protocol itself (tests/e2e); this only lets the
// supervisor's own logic be proved fast and without one.
#pragma once

#include <fmt/format.h>
#include <poll.h>

#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lock/backend.hpp"
#include "redis/socket.hpp"
#include "util/clock.hpp"
#include "util/errors.hpp"

namespace redlock::fake {

enum class Acquire { acquired, busy, slot_done, unavailable };

// One answer to one renewal, after `delay` (during which the renewer's cancel descriptor aborts
// the call, and the renewal's own deadline times it out, as a real Connection does).
struct Renew {
    enum Answer { renewed, not_owner, unavailable, data_error } answer = renewed;
    Millis delay{0};
};

struct Call {
    // cancel_fd: the renewer set its cancel descriptor (result "set") or, once stopped and
    // joined, cleared it ("cleared").
    enum class Kind { set_once_per, acquire, renew, release, finish, record_run, cancel_fd };
    Kind kind;
    Deadline at;  // when the call came in, by the backend's clock (set_clock)
    std::string token;
    std::string key;                  // renew: the keys it was given
    Millis ttl{0};                    // acquire, renew
    Millis wait{0};                   // acquire
    Millis keep{0};                   // release, finish
    Deadline deadline;                // renew
    std::optional<RunRecord> record;  // finish, record_run
    std::string result;  // renew, once answered: "renewed", "not_owner", "cancelled", ...
};

class Backend : public LockBackend {
  public:
    explicit Backend(const std::string& name = "fake-lock")
        : LockBackend(LockKeys::make(name, "redlock:")) {}

    // The clock that stamps each call and times a renewal's delay: the one the code under test
    // runs on (a fake::Clock for virtual time). Set before the first call.
    void set_clock(redlock::Clock& clock) { clock_ = &clock; }

    // The script. Renewals answer from `renews` in order, then `renew_default` forever.
    void set_acquire(Acquire a) {
        std::lock_guard g(mutex_);
        acquire_ = a;
    }
    // The acquire's answer comes `took` after it was sent (the lease counts from the send).
    void set_acquire_took(Millis took) {
        std::lock_guard g(mutex_);
        acquire_took_ = took;
    }
    void script_renewals(std::vector<Renew> renews, Renew then = {}) {
        std::lock_guard g(mutex_);
        renews_.assign(renews.begin(), renews.end());
        renew_default_ = then;
    }
    void set_release(Release::Outcome outcome, std::string detail = "") {
        std::lock_guard g(mutex_);
        release_ = Release(outcome, std::move(detail));
    }
    // finish() fails as a whole, as when Redis cannot be reached: nothing recorded, the
    // release's outcome unknown, both for `error`.
    void set_finish_fails(std::string error) {
        std::lock_guard g(mutex_);
        finish_error_ = std::move(error);
    }
    void set_renew_timeout(Millis t) { renew_timeout_ = t; }
    // Called (on the caller's thread, outside the fake's lock) as each call comes in, after it
    // was recorded: a test looks at the world at that moment (is the command still running?).
    void on_call(std::function<void(const Call&)> hook) { hook_ = std::move(hook); }

    // What happened.
    std::vector<Call> calls() const {
        std::lock_guard g(mutex_);
        return calls_;
    }
    std::vector<Call> calls(Call::Kind kind) const {
        std::vector<Call> out;
        for (Call& c : calls())
            if (c.kind == kind) out.push_back(std::move(c));
        return out;
    }
    // Release and finish alike: how a run gives the lock back.
    std::vector<Call> givebacks() const {
        std::vector<Call> out;
        for (Call& c : calls())
            if (c.kind == Call::Kind::release || c.kind == Call::Kind::finish)
                out.push_back(std::move(c));
        return out;
    }
    long long fence() const { return fence_; }

    // LockBackend.
    Acquisition acquire(const std::string& token, Millis ttl, const HolderInfo*, Millis wait,
                        SignalEvents&) override {
        Call c = make(Call::Kind::acquire, token);
        c.ttl = ttl;
        c.wait = wait;
        Acquire answer;
        {
            std::lock_guard g(mutex_);
            answer = acquire_;
            c.at -= acquire_took_;
        }
        record(c);
        Acquisition a;
        switch (answer) {
            case Acquire::acquired:
                a.acquired = true;
                a.fence = fence_;
                a.lease_start = c.at;  // as the real ones: when the acquire was sent
                a.where = "on the fake";
                break;
            case Acquire::busy:
                a.busy = fmt::format("lock '{}' is held by the fake", keys().key);
                break;
            case Acquire::slot_done:
                a.slot = 7;
                a.slot_done = SlotRecord{7, 0, "elsewhere", 1, 1, "ran", 0, std::nullopt};
                break;
            case Acquire::unavailable:
                throw RedisUnavailable("fake: cannot reach Redis for the acquire");
        }
        return a;
    }

    Release release(const std::string& token, Millis keep) override {
        Call c = make(Call::Kind::release, token);
        c.keep = keep;
        record(c);
        std::lock_guard g(mutex_);
        return release_;
    }

    Release finish(const std::string& token, Millis keep, const RunRecord& rec) override {
        Call c = make(Call::Kind::finish, token);
        c.keep = keep;
        c.record = rec;
        record(c);
        std::lock_guard g(mutex_);
        if (!finish_error_.empty()) {
            Release r(Release::Outcome::unknown, finish_error_);
            r.record_error = finish_error_;
            return r;
        }
        Release r = release_;
        r.recorded = RecordResult{0, r.outcome != Release::Outcome::lost, rec.slot.has_value(), ""};
        return r;
    }

    RecordResult record_run(const std::string& token, const RunRecord& rec) override {
        Call c = make(Call::Kind::record_run, token);
        c.record = rec;
        record(c);
        return RecordResult{};
    }

    bool holds(const std::string&) override { return false; }
    std::string identity() const override { return fmt::format("fake://{}", keys().name); }
    void set_once_per(const std::optional<OncePer>&) override {
        record(make(Call::Kind::set_once_per, ""));
    }

    RenewResult renew(const LockKeys& keys, const std::string& token, Millis ttl,
                      Deadline deadline) override {
        Call c = make(Call::Kind::renew, token);
        c.key = keys.key;
        c.ttl = ttl;
        c.deadline = deadline;
        Renew step;
        std::size_t index;
        {
            std::lock_guard g(mutex_);
            if (!renews_.empty()) {
                step = renews_.front();
                renews_.pop_front();
            } else {
                step = renew_default_;
            }
            index = calls_.size();
        }
        record(c);
        if (step.delay > Millis(0)) {
            // As Connection: a readable cancel descriptor aborts, the deadline times out.
            Deadline until = std::min(c.at + step.delay, deadline);
            pollfd p{cancel_fd_, POLLIN, 0};
            for (;;) {
                int n = clock_->poll(&p, cancel_fd_ >= 0 ? 1 : 0, until);
                if (n > 0) {
                    answered(index, "cancelled");
                    throw Cancelled();
                }
                if (clock_->now() >= until) break;
            }
            if (deadline < c.at + step.delay) {
                answered(index, "timed out");
                throw ReplyLost("fake: the renewal timed out");
            }
        }
        switch (step.answer) {
            case Renew::renewed:
                answered(index, "renewed");
                return RenewResult::renewed;
            case Renew::not_owner:
                answered(index, "not_owner");
                return RenewResult::not_owner;
            case Renew::unavailable:
                answered(index, "unavailable");
                throw RedisUnavailable("fake: Redis is restarting");
            case Renew::data_error:
                answered(index, "data_error");
                throw DataError("fake: the key holds a list");
        }
        return RenewResult::renewed;
    }
    // As the node backend: the lease counts from when the command was sent, less the margin.
    Deadline lease_end(Deadline sent, Millis ttl) const override {
        return sent + ttl - lease_margin(ttl);
    }
    // Only the renewer's thread sets and reads it while it runs; stop() clears it after the join.
    void set_cancel_fd(int fd) override {
        cancel_fd_ = fd;
        Call c = make(Call::Kind::cancel_fd, "");
        c.result = fd >= 0 ? "set" : "cleared";
        record(c);
    }
    Millis renew_timeout() const override { return renew_timeout_; }

  private:
    Call make(Call::Kind kind, const std::string& token) const {
        Call c{};
        c.kind = kind;
        c.at = clock_->now();
        c.token = token;
        return c;
    }
    void record(const Call& c) {
        {
            std::lock_guard g(mutex_);
            calls_.push_back(c);
        }
        if (hook_) hook_(c);
    }
    void answered(std::size_t index, const char* result) {
        std::lock_guard g(mutex_);
        calls_[index].result = result;
    }

    mutable std::mutex mutex_;
    std::vector<Call> calls_;
    Acquire acquire_ = Acquire::acquired;
    Millis acquire_took_{0};
    std::deque<Renew> renews_;
    Renew renew_default_;
    Release release_;
    std::string finish_error_;
    Millis renew_timeout_{500};
    int cancel_fd_ = -1;
    redlock::Clock* clock_ = &boot_clock();
    long long fence_ = 42;
    std::function<void(const Call&)> hook_;
};

}  // namespace redlock::fake

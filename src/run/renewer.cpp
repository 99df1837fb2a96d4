#include "run/renewer.hpp"

#include <poll.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <system_error>

#include "redis/socket.hpp"
#include "util/backoff.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {
namespace {

Fd make_eventfd() {
    Fd fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!fd) throw std::system_error(errno, std::generic_category(), "eventfd");
    return fd;
}

void signal_eventfd(int fd) {
    std::uint64_t one = 1;
    while (::write(fd, &one, sizeof one) < 0 && errno == EINTR) {
    }
}

// Sleeps until `until`; returns false when cancelled first.
bool sleep_until(Clock& clock, Deadline until, int cancel_fd) {
    for (;;) {
        pollfd p{cancel_fd, POLLIN, 0};
        int n = clock.poll(&p, 1, until);
        if (n > 0) return false;
        if (n < 0 && errno != EINTR) return false;
        if (clock.now() >= until) return true;
    }
}

}  // namespace

Renewer::Renewer(LockBackend& lock, LockKeys keys, std::string token, Millis ttl, Millis every,
                 Deadline lease_start, Clock& clock, Millis first_lease)
    : lock_(lock),
      clock_(clock),
      keys_(std::move(keys)),
      token_(std::move(token)),
      ttl_(ttl),
      every_(every),
      lease_start_(lease_start),
      first_lease_(first_lease),
      valid_until_ns_(lock.lease_end(lease_start, first_lease > Millis(0) ? first_lease : ttl)
                          .time_since_epoch()
                          .count()),
      cancel_(make_eventfd()),
      event_(make_eventfd()) {}

Renewer::~Renewer() {
    stop();
}

void Renewer::start() {
    // Counted before the thread exists, so that a virtual clock cannot move on without it.
    clock_.thread_started();
    try {
        thread_ = std::thread([this] {
            run();
            clock_.thread_ended();
        });
    } catch (...) {
        clock_.thread_ended();
        throw;
    }
}

void Renewer::stop() {
    if (!thread_.joinable()) return;
    signal_eventfd(cancel_.get());
    thread_.join();
    lock_.set_cancel_fd(-1);
}

std::string Renewer::lost_reason() const {
    std::lock_guard lock(mutex_);
    return lost_reason_;
}

std::string Renewer::last_failure() const {
    std::lock_guard lock(mutex_);
    return last_failure_;
}

void Renewer::report_lost(std::string reason) {
    {
        std::lock_guard lock(mutex_);
        lost_reason_ = std::move(reason);
    }
    signal_eventfd(event_.get());
}

void Renewer::run() {
    lock_.set_cancel_fd(cancel_.get());
    Deadline next = first_renewal();
    // Retries of a failed renewal start at 50ms and double up to 1s (or every/2 when that is
    // shorter, so a short ttl still gets several tries before its lease ends), jittered.
    Backoff backoff(Millis(50), std::clamp(every_ / 2, Millis(50), Millis(1000)));
    for (;;) {
        if (!sleep_until(clock_, next, cancel_.get())) return;
        Deadline valid_until = this->valid_until();
        Deadline sent = clock_.now();
        // A renewal that answers after the lease ran out proves nothing; don't wait past it.
        Deadline deadline = std::min(sent + lock_.renew_timeout(), valid_until);
        if (deadline <= sent) return;  // the main loop declares the loss at valid_until
        try {
            // Half the time at most, so an unreachable sentinel leaves the renewal its share.
            lock_.follow_master(sent + (deadline - sent) / 2);
            RenewResult r = lock_.renew(keys_, token_, ttl_, deadline);
            if (r == RenewResult::not_owner) {
                report_lost("the key no longer holds this run's token");
                return;
            }
            lock_.confirm_renewal(valid_until);
            Deadline extended = lock_.lease_end(sent, ttl_);
            valid_until_ns_ = extended.time_since_epoch().count();
            renewed_ = true;
            if (on_extended_) on_extended_(extended);
            log::verbose("renewed lock '{}' in {}", keys_.key,
                         format_duration(std::chrono::duration_cast<Millis>(clock_.now() - sent)));
            next = sent + every_;
            backoff.reset();
            {
                std::lock_guard lock(mutex_);
                last_failure_.clear();
            }
        } catch (const Cancelled&) {
            return;
        } catch (const DataError& e) {
            report_lost(fmt::format("the key was replaced ({})", e.what()));
            return;
        } catch (const std::exception& e) {
            // Transient: timeouts, resets, READONLY, LOADING, MASTERDOWN during a failover or a
            // restart. Only the lease end (decided by the main loop) or "not our token" is a
            // loss, so keep trying until then.
            {
                std::lock_guard lock(mutex_);
                last_failure_ = e.what();
            }
            Millis delay = backoff.next();
            log::verbose("renewing lock '{}' failed, retrying in {}: {}", keys_.key,
                         format_duration(delay), e.what());
            next = clock_.now() + delay;
        }
    }
}

}  // namespace redlock

#include "lock/quorum_wait.hpp"

#include <fmt/format.h>
#include <poll.h>

#include <algorithm>
#include <random>

#include "lock/holder.hpp"
#include "lock/quorum_math.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {
namespace {

// Throws when too few nodes answered to decide anything: the lock is not known to be busy.
[[noreturn]] void throw_unreachable(const LockKeys& keys, const QuorumAttempt& a) {
    std::string first = a.first_error ? a.first_error->message : std::string("no reply");
    int code = a.first_error ? a.first_error->code : exit_code::unavailable;
    // A usage or auth problem on a node says more than "unavailable"; a plain internal error
    // (an unexpected reply) does not.
    if (code == exit_code::internal) code = exit_code::unavailable;
    throw Error(fmt::format("cannot take lock '{}': only {} of {} Redis nodes answered ({} "
                            "needed for a majority); first error: {}",
                            keys.key, a.answered, a.nodes, majority(a.nodes), first),
                code);
}

}  // namespace

std::string quorum_busy_message(const LockKeys& keys, const QuorumAttempt& a,
                                std::optional<Millis> wait) {
    std::string tail = wait ? fmt::format("; gave up after waiting {}", format_duration(*wait))
                            : std::string("; not running the command");
    if (!a.why.empty())
        return fmt::format("lock '{}' not taken: {} of {} nodes accepted it ({} answered) but {}{}",
                           keys.key, a.accepted, a.nodes, a.answered, a.why, tail);
    std::string holder = a.busy ? fmt::format(", held by {}", describe_holder(*a.busy)) : "";
    return fmt::format(
        "lock '{}' is held elsewhere: only {} of {} nodes accepted it ({} answered, "
        "{} needed){}{}",
        keys.key, a.accepted, a.nodes, a.answered, majority(a.nodes), holder, tail);
}

QuorumWaitResult quorum_acquire_waiting(QuorumLock& lock, const LockKeys& keys,
                                        const std::string& token, Millis ttl,
                                        const HolderInfo* info, Millis wait,
                                        SignalEvents& signals) {
    Deadline start = BootClock::now();
    Deadline give_up = wait == Millis::max() ? Deadline::max() : start + wait;
    std::mt19937 random{std::random_device{}()};
    std::uniform_int_distribution<Millis::rep> pause(quorum_retry_min.count(),
                                                     quorum_retry_max.count());
    QuorumWaitResult result;
    for (int attempt = 1;; ++attempt) {
        // Checked before every attempt: a waiter told to stop must never take the lock.
        if ((result.interrupted_by = stopping_signal(signals))) return result;
        result.last = lock.acquire(keys, token, ttl, info);
        if (result.last.acquired && (result.interrupted_by = stopping_signal(signals))) {
            lock.release(keys, token, Millis(0));
            result.last.acquired = false;
            return result;
        }
        if (result.last.acquired) {
            if (attempt > 1)
                log::verbose("waited {} ({} attempts) for lock '{}'",
                             format_duration(std::chrono::ceil<Millis>(BootClock::now() - start)),
                             attempt, keys.key);
            return result;
        }
        bool decided = result.last.answered >= majority(result.last.nodes);
        Deadline now = BootClock::now();
        if (now >= give_up) {
            if (!decided) throw_unreachable(keys, result.last);
            return result;
        }
        if (attempt == 1)
            log::verbose(
                "lock '{}' not taken ({} of {} nodes accepted, {} answered); retrying "
                "after random pauses (up to {})",
                keys.key, result.last.accepted, result.last.nodes, result.last.answered,
                wait == Millis::max() ? std::string("forever") : format_duration(wait));
        Deadline resume = std::min(give_up, now + Millis(pause(random)));
        pollfd p{signals.fd(), POLLIN, 0};
        ::poll(&p, 1, millis_until(resume));  // a signal cuts the pause short
    }
}

}  // namespace redlock

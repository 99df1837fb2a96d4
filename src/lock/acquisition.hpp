// How a backend's last acquire attempt becomes the run's Acquisition, written once for a single
// node and a quorum: a signal, a --once-per slot already done, busy, or held.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "lock/backend.hpp"
#include "lock/ledger/ledger.hpp"
#include "util/clock.hpp"

namespace redlock {

// What the wait loop (waiter.hpp) ended with, for either backend.
struct LastAttempt {
    std::optional<int> interrupted_by;  // a signal ended the wait before the lock was taken
    std::optional<long long> slot;      // --once-per: the slot, when acquired or skipped
    std::optional<SlotRecord> slot_done;
    bool acquired = false;
    long long fence = 0;
    int permit = 1;
    Deadline lease_start{};
    Millis lease{0};  // the lease's length from lease_start; zero: the TTL
};

// `busy` is asked for the message when the lock was not taken; `held` for where it is held
// ("on 127.0.0.1:6379") when it was, after which nothing can fail: it may confirm the hold first
// (--min-replicas) and throw.
Acquisition acquisition(const LastAttempt& last, const std::function<std::string()>& busy,
                        const std::function<std::string()>& held);

}  // namespace redlock

// Polling for a condition another thread makes true, in the unit tests that run threads.
#pragma once

#include <chrono>
#include <thread>

#include "util/clock.hpp"

namespace redlock {

// Waits until `done` holds, polling every 5ms; false when `bound` passes first. The bound only
// keeps a broken test from hanging: pass a generous one where a sanitizer pass on a loaded
// machine makes the other thread slow.
template <class F>
bool eventually(F done, Millis bound = Millis(5000)) {
    Deadline end = BootClock::now() + bound;
    while (!done()) {
        if (BootClock::now() >= end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
}

}  // namespace redlock

// The live status line of a run that waits (--wait) with stderr on a terminal: who holds the
// lock and for how long, our place in the queue, the time waited and left, redrawn about once a
// second and erased when the wait ends. Never on a non-terminal (cron mail stays clean), nor
// with -q.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "lock/backend.hpp"
#include "lock/wait_progress.hpp"

namespace redlock {

// "waiting for lock 'k' (2nd in the queue; waited 5s, 55s left): held by web-2 pid 4120 (user
// deploy) for 12m3s, expires in 17s"
std::string format_wait_line(const WaitProgress& p);

// `line` (printable text) as it fits in `columns` terminal columns (one per character): whole,
// or cut where a word ends, with "..." appended; inside a word only when the first one is too
// wide.
std::string fit_wait_line(std::string_view line, std::size_t columns);

// Shows the line for `lock`'s waits while it lives, when stderr is a terminal and `wanted`;
// erases it when it goes (the lock taken, the wait given up, an error).
class WaitLine {
  public:
    WaitLine(LockBackend& lock, bool wanted);
    ~WaitLine();
    WaitLine(const WaitLine&) = delete;
    WaitLine& operator=(const WaitLine&) = delete;

  private:
    LockBackend& lock_;
    bool on_;
};

}  // namespace redlock

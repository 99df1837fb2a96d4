// The watchdog: a small process beside redlock-run that SIGKILLs the command's process group when
// the lease ends without redlock-run having acted (it is stopped, starved, or dead), so that the
// command never outlives its lease even when redlock-run cannot be scheduled.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>

#include "util/clock.hpp"
#include "util/fd.hpp"

namespace redlock {

namespace watch_loop {
struct Shared;
}

class Watchdog {
  public:
    // How it starts: the embedded program (src/watchdog_main.cpp) where that can run, else a
    // fork of ours; `fork` skips the first, so that the unit tests prove both.
    enum class Start { exec_or_fork, fork };
    // Starts the watchdog (a child of ours, in its own process group) for lock `key`; it
    // SIGKILLs the group announced through announce_fd() once `deadline` passes unextended, or
    // at once when redlock-run dies. Deadline::max() disables the deadline (--on-lost ignore).
    // With `handover` (a run/handover.hpp file, at fd 10 or above; -1: none), a watchdog that
    // killed the group because redlock-run died then runs the hand-over, which records the run
    // and releases the lock. Throws Error when it cannot be started.
    Watchdog(const std::string& key, Deadline deadline, Start how = Start::exec_or_fork,
             int handover = -1);
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;
    ~Watchdog();

    pid_t pid() const { return pid_; }
    // Where the command's vfork child writes its process group before it execs (announce()).
    int announce_fd() const { return to_watchdog_.get(); }
    // Moves the deadline to `deadline`, the lease end a renewal just proved. Callable from the
    // renewer thread: one atomic store into memory the watchdog reads, never blocking, and the
    // newest always wins (nothing queues up while the watchdog is stopped).
    void extend(Deadline deadline) const noexcept;
    // Sends the watchdog SIGKILL without waiting for it to die, unless it is already acting on
    // the lease end (then it is left to finish its kill and its message). Idempotent.
    void stop() noexcept;
    // Stops and reaps the watchdog. Must run before the command's leader is reaped (see
    // watchdog.cpp on recycled process group ids). Idempotent.
    void dismiss() noexcept;

  private:
    pid_t pid_ = -1;
    bool stopped_ = false;  // stop() ran
    bool killed_ = false;   // and sent SIGKILL (the watchdog was not acting)
    Fd to_watchdog_;        // write end of the pipe the watchdog reads; its EOF means we died
    watch_loop::Shared* shared_ = nullptr;  // the lease and the messages, mapped by both
    std::size_t shared_size_ = 0;
};

// For the command's vfork child, between setpgid and exec: tells the watchdog its group, so the
// watchdog knows it before the command runs a single instruction. Only a write(2).
void announce_process_group(int announce_fd, pid_t pgid) noexcept;

}  // namespace redlock

// Signals as events: the ones we care about are blocked in every thread and read from a
// signalfd by the main loop (the tini pattern), so no logic ever runs in an async handler.
#pragma once

#include <signal.h>

#include <optional>

#include "util/fd.hpp"

namespace redlock {

// SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH: passed on to the command.
const sigset_t& forwarded_signals();

class SignalEvents {
  public:
    // Blocks the forwarded signals plus SIGCHLD (and SIGTTOU, so that handing the terminal back
    // works from any process group, and SIGPIPE, so a closed stderr cannot kill us).
    // Call before any thread starts: threads inherit the mask.
    SignalEvents();
    // The mask stays as it is: a signal still pending at exit must not kill us with its default
    // action before we report the command's status.
    ~SignalEvents() = default;
    SignalEvents(const SignalEvents&) = delete;
    SignalEvents& operator=(const SignalEvents&) = delete;

    int fd() const { return fd_.get(); }
    // The next pending signal number, or nullopt when none is queued.
    std::optional<int> next();
    // The mask the process had before; children get it back.
    const sigset_t& original_mask() const { return original_; }

  private:
    sigset_t original_{};
    Fd fd_;
};

// The first queued signal that ends a wait for the lock, swallowing those that do not (SIGWINCH,
// SIGCHLD); nullopt when none is queued.
std::optional<int> stopping_signal(SignalEvents& signals);

}  // namespace redlock

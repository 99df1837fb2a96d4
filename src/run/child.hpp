// The command redlock-run guards: started in its own process group, so signals reach a shell's
// grandchildren too, killed if redlock-run dies (with its whole group, by the watchdog), and
// always reaped (last: see Child::try_reap).
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "run/watchdog.hpp"
#include "util/errors.hpp"

namespace redlock {

class Child {
  public:
    using Env = std::vector<std::pair<std::string, std::string>>;

    // Starts argv[0] (searched in PATH) with `env` (distinct names) replacing or adding to our
    // environment, and the signal mask `mask`. When we own the terminal's foreground, the
    // child's group takes it over so an interactive command can read the terminal and gets ^C
    // directly. With a `watchdog`, the child announces its group to it before it execs, and the
    // watchdog is dismissed before the child is reaped; it must outlive the Child.
    static Child spawn(const std::vector<std::string>& argv, const Env& env, const sigset_t& mask,
                       Watchdog* watchdog = nullptr);

    Child(Child&& other) noexcept;
    Child& operator=(Child&&) = delete;
    Child(const Child&) = delete;
    // A child still running here (an exception unwound past the main loop) is killed. The
    // watchdog is dismissed, then the child reaped.
    ~Child();

    pid_t pid() const { return pid_; }
    bool running() const { return !status_; }
    // Sends `sig` to the child's process group (or the child alone if the group is gone).
    void signal(int sig) const;
    // Whether the child has exited; once it has, its status is known and the watchdog is told to
    // go (SIGKILL), but both are reaped only by the destructor (see child.cpp).
    bool try_reap();
    // The raw wait status; only after try_reap() returned true.
    int wait_status() const { return *status_; }

  private:
    Child(pid_t pid, bool took_terminal, Watchdog* watchdog)
        : pid_(pid), took_terminal_(took_terminal), watchdog_(watchdog) {}
    void reap() noexcept;
    void restore_terminal();
    void suspend_with_terminal();

    pid_t pid_ = -1;
    bool took_terminal_ = false;
    Watchdog* watchdog_ = nullptr;
    std::optional<int> status_;
};

// The shell's convention: the exit code, or 128+N for a child killed by signal N.
int exit_status_of(int wait_status);

}  // namespace redlock

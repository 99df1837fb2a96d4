#include "util/signals.hpp"

#include <sys/signalfd.h>

#include <cerrno>
#include <system_error>

namespace redlock {

const sigset_t& forwarded_signals() {
    static const sigset_t set = [] {
        sigset_t s;
        sigemptyset(&s);
        for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH})
            sigaddset(&s, sig);
        return s;
    }();
    return set;
}

SignalEvents::SignalEvents() {
    sigset_t set = forwarded_signals();
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTTOU);
    // Blocked, not ignored: an ignored SIGPIPE would be inherited by the command, while a
    // blocked one is undone by the child's mask. A closed stderr then fails our write with
    // EPIPE instead of killing us and orphaning the command with the lock still held.
    sigaddset(&set, SIGPIPE);
    if (pthread_sigmask(SIG_BLOCK, &set, &original_) != 0)
        throw std::system_error(errno, std::generic_category(), "sigprocmask");
    sigdelset(&set, SIGTTOU);
    sigdelset(&set, SIGPIPE);
    fd_.reset(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    if (!fd_) throw std::system_error(errno, std::generic_category(), "signalfd");
}

std::optional<int> SignalEvents::next() {
    signalfd_siginfo info{};
    for (;;) {
        ssize_t n = ::read(fd_.get(), &info, sizeof info);
        if (n == sizeof info) return static_cast<int>(info.ssi_signo);
        if (n < 0 && errno == EINTR) continue;
        return std::nullopt;
    }
}

std::optional<int> stopping_signal(SignalEvents& signals) {
    while (auto sig = signals.next()) {
        if (*sig != SIGWINCH && *sig != SIGCHLD) return sig;
    }
    return std::nullopt;
}

}  // namespace redlock

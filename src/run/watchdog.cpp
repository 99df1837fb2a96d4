// The watchdog process and the pipe redlock-run talks to it through. Why a process: the supervisor
// (run.cpp) stops the command before the lease ends, but only while redlock-run is scheduled. A
// SIGSTOPped redlock-run stops nothing, and a SIGKILLed one takes only its direct child along
// (PR_SET_PDEATHSIG): a shell's subprocesses run on, overlapping the next holder. The watchdog
// is a separate process that owns the same deadline and kills the command's whole group.
#include "run/watchdog.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "util/errors.hpp"
#include "util/exit_codes.hpp"
#include "util/log.hpp"

extern char** environ;

namespace redlock {
namespace {

// The pipe carries fixed records of 16 bytes: below PIPE_BUF, so each write is atomic and the
// renewer thread and the command's vfork child can never interleave halves of two records.
struct Record {
    std::int64_t kind;
    std::int64_t value;
};
enum : std::int64_t { kind_deadline = 1, kind_group = 2 };

constexpr int watchdog_fd = 3;  // where the watchdog finds the read end

void write_record(int fd, Record r) noexcept {
    while (::write(fd, &r, sizeof r) < 0 && errno == EINTR) {
    }
}

Deadline deadline_of(std::int64_t ns) {
    return Deadline(BootClock::duration(ns));
}

// The watchdog's two messages, formatted (and escaped) by the parent before the fork; the child
// appends the process group. The child makes only async-signal-safe calls: redlock-run may have
// other threads (a quorum's node workers) whose locks, malloc's among them, a forked child must
// never wait for. So it writes to stderr itself, and its messages do not go to syslog (the
// lost lock that follows is logged there by redlock-run, when it lives).
struct Messages {
    std::string lease_ended;
    std::string parent_died;
};

// The watchdog's whole life, in the forked child: reads the pipe until EOF and enforces the
// deadline. Returns its exit status.
int watch(const Messages& say, pid_t parent);

}  // namespace

// fork without exec: the watchdog needs nothing but the few system calls of watch() below, and an
// exec of our own binary (dynamic linking, relocations) cost each run ~0.4 ms, a third of what a
// locked `true` costs. After a fork only async-signal-safe calls are safe while other threads
// may exist (a quorum's node workers): the child sets itself up and runs watch() with system
// calls alone, its messages formatted before the fork. It never returns into our code: it _exits.
Watchdog::Watchdog(const std::string& key, Deadline deadline) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0)
        throw Error(fmt::format("cannot start the watchdog for lock '{}': pipe: {}", key,
                                std::strerror(errno)),
                    exit_code::internal);
    Fd read_end(fds[0]);
    to_watchdog_.reset(fds[1]);
    // Never block the renewer (or the command's vfork child) on a watchdog that does not read:
    // a record lost to a full pipe leaves an earlier deadline in force, which errs early.
    fcntl(to_watchdog_.get(), F_SETFL, O_NONBLOCK);
    // The first deadline is in the pipe before the command exists, so there is never a moment
    // when the command runs and the watchdog has no deadline.
    extend(deadline);

    pid_t parent = getpid();
    const Messages say{
        log::stderr_line(fmt::format("lock '{}': the lease ended and redlock-run (pid {}) had "
                                     "not stopped the command; the watchdog sent SIGKILL to its "
                                     "process group ",
                                     key, parent)),
        log::stderr_line(fmt::format("lock '{}': redlock-run (pid {}) died; the watchdog sent "
                                     "SIGKILL to the command's process group ",
                                     key, parent))};
    pid_t pid = fork();
    if (pid < 0)
        throw Error(fmt::format("cannot start the watchdog for lock '{}': fork: {}", key,
                                std::strerror(errno)),
                    exit_code::internal);
    if (pid == 0) {
        // Its own process group: the command's `kill 0` (its own group) cannot reach it, nor
        // can a terminal's ^C/^Z or a `kill -STOP -PGID` aimed at redlock-run's job.
        setpgid(0, 0);
        // A name of its own in ps and top, beside the command it guards.
        prctl(PR_SET_NAME, "rl-watchdog", 0, 0, 0);
        // Every catchable signal blocked (they already are: SignalEvents blocked them before
        // any of this): only SIGKILL, from redlock-run once it no longer needs the watchdog or
        // from whoever kills everything, ends it.
        sigset_t all;
        sigfillset(&all);
        sigprocmask(SIG_SETMASK, &all, nullptr);
        // It keeps stderr for its message and the pipe's read end; nothing else of ours: not the
        // Redis connection, the signalfd, or the write end (whose EOF tells it we died), nor our
        // stdin and stdout, which a reader may be waiting to see closed.
        if (read_end.get() != watchdog_fd) dup2(read_end.get(), watchdog_fd);
        close_range(watchdog_fd + 1, ~0U, 0);
        close(STDIN_FILENO);
        close(STDOUT_FILENO);
        _exit(watch(say, parent));
    }
    pid_ = pid;
    // Also from here, as for the command: the group exists before anyone could signal it.
    setpgid(pid, pid);
}

void Watchdog::extend(Deadline deadline) const noexcept {
    write_record(to_watchdog_.get(), {kind_deadline, deadline.time_since_epoch().count()});
}

void Watchdog::stop() noexcept {
    if (pid_ <= 0 || stopped_) return;
    ::kill(pid_, SIGKILL);
    stopped_ = true;
}

// The write end stays open until the destructor: the renewer thread may still call extend() after
// the command was reaped (the write then fails with EPIPE, SIGPIPE being blocked), and closing it
// first would read as "redlock-run died" to a watchdog still alive.
void Watchdog::dismiss() noexcept {
    if (pid_ <= 0) return;
    stop();
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

void announce_process_group(int announce_fd, pid_t pgid) noexcept {
    if (announce_fd >= 0) write_record(announce_fd, {kind_group, pgid});
}

namespace {

// Kills by process group id, which is safe only while that id cannot name another group: the id
// stays reserved while the leader exists, even as a zombie. While redlock-run lives it never reaps
// the leader before it has killed and reaped this watchdog (Child::reap), so every kill below
// reaches the command's group or nobody. When redlock-run dies, the kernel closes its files (our
// EOF) before it reparents the leader and sends it PR_SET_PDEATHSIG; the id could only be reused
// after init reaped the leader, every other member died, and the pid counter wrapped around to it,
// while this process, woken first, is a single poll(2) return away from its kill.
// `line`, then `group` in decimal and a newline, on stderr: no allocation, no locks.
void report(const std::string& line, pid_t group) noexcept {
    char digits[16];
    char* end = digits + sizeof digits;
    char* p = end;
    *--p = '\n';
    auto g = static_cast<unsigned long>(group);
    do *--p = static_cast<char>('0' + g % 10);
    while ((g /= 10) != 0 && p > digits);
    iovec parts[2] = {{const_cast<char*>(line.data()), line.size()},
                      {p, static_cast<std::size_t>(end - p)}};
    while (::writev(STDERR_FILENO, parts, 2) < 0 && errno == EINTR) {
    }
}

int watch(const Messages& say, pid_t /*parent*/) {
    Deadline deadline = Deadline::max();
    pid_t group = 0;
    for (;;) {
        if (group > 0 && BootClock::now() >= deadline) {
            ::kill(-group, SIGKILL);
            report(say.lease_ended, group);
            return exit_code::ok;
        }
        pollfd p{watchdog_fd, POLLIN, 0};
        int timeout = group > 0 && deadline != Deadline::max() ? millis_until(deadline) : -1;
        int n = ::poll(&p, 1, timeout);
        if (n < 0 && errno != EINTR) return exit_code::internal;
        if (n <= 0) continue;
        Record r{};
        ssize_t got = ::read(watchdog_fd, &r, sizeof r);
        if (got < 0 && errno == EINTR) continue;
        if (got == 0) {
            // Every write end is gone: redlock-run died (ours is close-on-exec in the command,
            // and the watchdog holds none). Nobody renews the lock any more.
            if (group > 0) {
                ::kill(-group, SIGKILL);
                report(say.parent_died, group);
            }
            return exit_code::ok;
        }
        if (got != sizeof r) return exit_code::internal;
        if (r.kind == kind_deadline) deadline = deadline_of(r.value);
        if (r.kind == kind_group) group = static_cast<pid_t>(r.value);
    }
}

}  // namespace

}  // namespace redlock

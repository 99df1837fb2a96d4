// The watchdog process and the pipe redlock-run talks to it through. Why a process: the supervisor
// (run.cpp) stops the command before the lease ends, but only while redlock-run is scheduled. A
// SIGSTOPped redlock-run stops nothing, and a SIGKILLed one takes only its direct child along
// (PR_SET_PDEATHSIG): a shell's subprocesses run on, overlapping the next holder. The watchdog
// is a separate process that owns the same deadline and kills the command's whole group.
//
// Its program is src/watchdog_main.cpp, built without the C library and embedded in ours: we
// vfork and exec it from a sealed memory file. Where that program is missing (another
// architecture) or cannot be executed (a seccomp or LSM policy that forbids executing memory
// files), we fork instead and the child runs the same loop (run/watch_loop.hpp).
#include "run/watchdog.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "run/watch_loop.hpp"
#include "util/errors.hpp"
#include "util/exit_codes.hpp"
#include "util/log.hpp"

namespace redlock {
namespace {

using watch_loop::Record;
constexpr int watchdog_fd = watch_loop::pipe_fd;  // where the watchdog finds the read end

void write_record(int fd, Record r) noexcept {
    while (::write(fd, &r, sizeof r) < 0 && errno == EINTR) {
    }
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

// In the watchdog's child, before it runs the loop or execs the program. Its own process group,
// every signal blocked (a mask survives exec): only SIGKILL ends it, and the command's `kill 0`,
// a terminal's ^C or ^Z, or a `kill -STOP -PGID` aimed at redlock-run's job cannot reach it. It
// keeps stderr for its message, the pipe's read end on fd 3, and the descriptors in `keep` (each
// above 3, close-on-exec); nothing else of ours: not the Redis connection, the signalfd, or the
// write end (whose EOF tells it we died), nor our stdin and stdout, which a reader may be waiting
// to see closed. System calls only: it runs after fork or vfork.
void become_watchdog(int read_end, std::initializer_list<int> keep) noexcept {
    setpgid(0, 0);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    if (read_end == watchdog_fd)
        fcntl(watchdog_fd, F_SETFD, 0);  // pipe2 made it close-on-exec
    else
        dup2(read_end, watchdog_fd);  // the copy is not close-on-exec
    unsigned from = watchdog_fd + 1;
    for (int fd : keep) {  // in increasing order
        if (static_cast<unsigned>(fd) > from) close_range(from, static_cast<unsigned>(fd) - 1, 0);
        from = static_cast<unsigned>(fd) + 1;
    }
    close_range(from, ~0U, 0);
    close(STDIN_FILENO);
    close(STDOUT_FILENO);
}

#ifdef REDLOCK_WATCHDOG_IMAGE
}  // namespace
namespace embedded {
extern const unsigned char rl_watchdog[];  // generated from src/watchdog_main.cpp
extern const std::size_t rl_watchdog_size;
}  // namespace embedded
namespace {

// The embedded watchdog program in a memory file, made once per process; -1 when that fails.
// Sealed, so nothing can change it before an exec; close-on-exec (execveat of an ELF file does
// not need it open after) and above the low numbers the vfork child arranges.
int watchdog_program() {
    static const int fd = [] {
        int f = memfd_create("rl-watchdog", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (f < 0) return -1;
        Fd file(f);
        const unsigned char* p = embedded::rl_watchdog;
        std::size_t left = embedded::rl_watchdog_size;
        while (left > 0) {
            ssize_t n = ::write(file.get(), p, left);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return -1;
            p += n;
            left -= static_cast<std::size_t>(n);
        }
        if (fcntl(file.get(), F_ADD_SEALS,
                  F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
            return -1;
        return fcntl(file.get(), F_DUPFD_CLOEXEC, 10);
    }();
    return fd;
}
#else
int watchdog_program() {
    return -1;
}
#endif

// Runs the embedded program as the watchdog, its pipe on fd 3, stdin and stdout closed: the pid,
// or -1 when it could not be started (the caller then forks one). vfork: no copy of our page
// tables, no copy-on-write faults afterwards, and the exec maps a few pages of a static program.
pid_t exec_watchdog(int read_end, const Messages& say) {
    int program = watchdog_program();
    if (program < 0) return -1;
    char name[] = "rl-watchdog";
    char* argv[] = {name, const_cast<char*>(say.lease_ended.c_str()),
                    const_cast<char*>(say.parent_died.c_str()), nullptr};
    char* envp[] = {nullptr};
    // A failed exec is reported through a close-on-exec pipe: EOF means the exec happened. Not
    // through shared memory, which a sanitizer that turns vfork into fork would not share.
    int err[2];
    if (pipe2(err, O_CLOEXEC) < 0) return -1;
    // Its write end above the numbers the child arranges (0-3), like the program's.
    Fd err_read(err[0]), err_low(err[1]), err_write(fcntl(err[1], F_DUPFD_CLOEXEC, 10));
    err_low.reset();
    if (!err_write) return -1;
    pid_t pid = vfork();
    if (pid == 0) {
        // The program's descriptor and the error pipe close at the exec.
        become_watchdog(read_end,
                        {std::min(program, err_write.get()), std::max(program, err_write.get())});
        syscall(SYS_execveat, program, "", argv, envp, AT_EMPTY_PATH);
        char failed = 1;
        while (::write(err_write.get(), &failed, 1) < 0 && errno == EINTR) {
        }
        _exit(127);
    }
    if (pid < 0) return -1;
    err_write.reset();
    char failed = 0;
    ssize_t n;
    while ((n = ::read(err_read.get(), &failed, 1)) < 0 && errno == EINTR) {
    }
    if (n > 0) {
        while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
        return -1;
    }
    return pid;
}

}  // namespace

// The embedded program when it can run, else fork without exec (an exec of our own binary, with
// its dynamic linking and relocations, would cost more than the fork). After a fork only
// async-signal-safe calls are safe while other threads may exist (a quorum's node workers): the
// child sets itself up and runs the loop with system calls alone, its messages formatted before
// the fork. It never returns into our code: it _exits.
Watchdog::Watchdog(const std::string& key, Deadline deadline, Start how) {
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
    if (pid_t pid = how == Start::fork ? -1 : exec_watchdog(read_end.get(), say); pid > 0) {
        pid_ = pid;
        setpgid(pid, pid);  // as for the command: the group exists before anyone could signal it
        return;
    }
    pid_t pid = fork();
    // No process (a process limit, memory): the command cannot run guarded, so it is not started,
    // as when its own fork fails (Run::start records failed-to-start and releases the lock).
    if (pid < 0)
        throw SpawnError(fmt::format("cannot start the watchdog for lock '{}': fork: {}", key,
                                     std::strerror(errno)),
                         exit_code::cannot_fork);
    if (pid == 0) {
        become_watchdog(read_end.get(), {});
        watch_loop::run(say.lease_ended.c_str(), say.parent_died.c_str());
    }
    pid_ = pid;
    // Also from here, as for the command: the group exists before anyone could signal it.
    setpgid(pid, pid);
}

void Watchdog::extend(Deadline deadline) const noexcept {
    write_record(to_watchdog_.get(),
                 {watch_loop::kind_deadline, deadline.time_since_epoch().count()});
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
    if (announce_fd >= 0) write_record(announce_fd, {watch_loop::kind_group, pgid});
}

}  // namespace redlock

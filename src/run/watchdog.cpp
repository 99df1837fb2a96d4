// The watchdog process, and the pipe and shared memory redlock-run talks to it through. Why a
// process: the supervisor (run.cpp) stops the command before the lease ends, but only while
// redlock-run is scheduled. A SIGSTOPped redlock-run stops nothing, and a SIGKILLed one takes
// only its direct child along (PR_SET_PDEATHSIG): a shell's subprocesses run on, overlapping the
// next holder. The watchdog is a separate process that owns the same deadline and kills the
// command's whole group.
//
// Its program is src/watchdog_main.cpp, built without the C library and embedded in ours: we
// vfork and exec it from a sealed memory file. Where that program is missing (another
// architecture) or cannot be executed (a seccomp or LSM policy that forbids executing memory
// files), we fork instead and the child runs the same loop (run/watch_loop.hpp).
#include "run/watchdog.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
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
using watch_loop::Shared;

// The lowest descriptor number the parent moves the watchdog's inputs to, above the numbers the
// child arranges (0-4), so that no dup2 there overwrites another input.
constexpr int high_fd = 10;

void write_record(int fd, Record r) noexcept {
    while (::write(fd, &r, sizeof r) < 0 && errno == EINTR) {
    }
}

// In the watchdog's child, before it runs the loop or execs the program. Its own process group,
// every signal blocked (a mask survives exec): only SIGKILL ends it, and the command's `kill 0`,
// a terminal's ^C or ^Z, or a `kill -STOP -PGID` aimed at redlock-run's job cannot reach it. It
// keeps stderr for its message, the pipe's read end on fd 3, the shared memory file on fd 4, and
// the descriptors in `keep` (each above 4, close-on-exec); nothing else of ours: not the Redis
// connection, the signalfd, or the write end (whose EOF tells it we died), nor our stdin and
// stdout, which a reader may be waiting to see closed. With a hand-over (`handover` >= 0), our
// binary `exe` on fd 5 and the hand-over's file on fd 6 (watch_loop::hand_over). System calls
// only: it runs after fork or vfork. `read_end`, `shared`, `exe` and `handover` are at high_fd
// or above.
void become_watchdog(int read_end, int shared, int exe, int handover,
                     std::initializer_list<int> keep) noexcept {
    setpgid(0, 0);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    dup2(read_end, watch_loop::pipe_fd);  // the copies are not close-on-exec
    dup2(shared, watch_loop::shared_fd);
    unsigned from = watch_loop::shared_fd + 1;
    if (exe >= 0 && handover >= 0) {
        dup2(exe, watch_loop::exe_fd);
        dup2(handover, watch_loop::handover_fd);
        from = watch_loop::handover_fd + 1;
    }
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

// Runs the embedded program as the watchdog, its pipe on fd 3, the shared file on fd 4, stdin and
// stdout closed: the pid, or -1 when it could not be started (the caller then forks one). vfork:
// no copy of our page tables, no copy-on-write faults afterwards, and the exec maps a few pages
// of a static program. Its argv is its name alone (see watch_loop::Shared).
pid_t exec_watchdog(int read_end, int shared, int exe, int handover) {
    int program = watchdog_program();
    if (program < 0) return -1;
    char name[] = "rl-watchdog";
    char* argv[] = {name, nullptr};
    char* envp[] = {nullptr};
    // A failed exec is reported through a close-on-exec pipe: EOF means the exec happened. Not
    // through shared memory, which a sanitizer that turns vfork into fork would not share.
    int err[2];
    if (pipe2(err, O_CLOEXEC) < 0) return -1;
    // Its write end above the numbers the child arranges (0-4), like the program's.
    Fd err_read(err[0]), err_low(err[1]), err_write(fcntl(err[1], F_DUPFD_CLOEXEC, high_fd));
    err_low.reset();
    if (!err_write) return -1;
    pid_t pid = vfork();
    if (pid == 0) {
        // The program's descriptor and the error pipe close at the exec.
        become_watchdog(read_end, shared, exe, handover,
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

// The fork's command line is redlock-run's own (the embedded program's is its name alone), which
// `pkill -f redlock-run` would match. The kernel reads it from the argv strings in our memory, so
// the forked child overwrites its copy of them. Found in the parent: glibc's
// program_invocation_name is argv[0], the start of those strings, and /proc/self/cmdline says
// how far they go.
struct ArgStrings {
    char* start = nullptr;
    std::size_t size = 0;
};

ArgStrings arg_strings() {
    static const ArgStrings found = [] {
        ArgStrings a;
        Fd f(::open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC));
        if (!f) return a;
        char buf[4096];
        std::size_t total = 0;
        ssize_t n;
        std::string first;
        while ((n = ::read(f.get(), buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
            if (n < 0) continue;
            if (total == 0) first.assign(buf, strnlen(buf, static_cast<std::size_t>(n)));
            total += static_cast<std::size_t>(n);
        }
        // Only when argv[0] is where the kernel's copy starts (nobody moved it).
        if (total > 1 && program_invocation_name && first == program_invocation_name)
            a = {program_invocation_name, total};
        return a;
    }();
    return found;
}

// In the forked child: the argv strings become "rl-watchdog" and NULs. Plain stores only.
void rename_forked(ArgStrings a) noexcept {
    if (!a.start) return;
    const char name[] = "rl-watchdog";
    for (std::size_t i = 0; i < a.size; ++i) a.start[i] = i < sizeof name - 1 ? name[i] : '\0';
}

// Our own binary for the hand-over, opened once: an O_PATH descriptor, enough for execveat, of
// the file this process runs, whatever replaced its path since; -1 when it cannot be opened.
int own_binary() {
    static const int fd = [] {
        Fd low(::open("/proc/self/exe", O_PATH | O_CLOEXEC));
        if (!low) return -1;
        return fcntl(low.get(), F_DUPFD_CLOEXEC, high_fd);
    }();
    return fd;
}

void unmap(Shared* s, std::size_t size) noexcept {
    if (s) munmap(s, size);
}

}  // namespace

// The embedded program when it can run, else fork without exec (an exec of our own binary, with
// its dynamic linking and relocations, would cost more than the fork). After a fork only
// async-signal-safe calls are safe while other threads may exist (a quorum's node workers): the
// child sets itself up and runs the loop with system calls alone, its messages formatted before
// the fork. It never returns into our code: it _exits.
Watchdog::Watchdog(const std::string& key, Deadline deadline, Start how, int handover) {
    auto fail = [&key](const char* what) {
        return Error(fmt::format("cannot start the watchdog for lock '{}': {}: {}", key, what,
                                 std::strerror(errno)),
                     exit_code::internal);
    };
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) throw fail("pipe");
    Fd read_low(fds[0]);
    to_watchdog_.reset(fds[1]);
    // Never block the command's vfork child on a watchdog that does not read (it writes one
    // record, which an empty pipe always takes).
    fcntl(to_watchdog_.get(), F_SETFL, O_NONBLOCK);
    Fd read_end(fcntl(read_low.get(), F_DUPFD_CLOEXEC, high_fd));
    if (!read_end) throw fail("fcntl");
    read_low.reset();

    // The watchdog's two messages, formatted (and escaped) here, before any fork; the watchdog
    // appends the process group. The forked child makes only async-signal-safe calls:
    // redlock-run may have other threads (a quorum's node workers) whose locks, malloc's among
    // them, it must never wait for. So it writes to stderr itself, and its messages do not go
    // to syslog (the lost lock that follows is logged there by redlock-run, when it lives).
    pid_t parent = getpid();
    std::string messages =
        log::stderr_line(fmt::format("lock '{}': the lease ended and redlock-run (pid {}) had "
                                     "not stopped the command; the watchdog sent SIGKILL to its "
                                     "process group ",
                                     key, parent));
    messages += '\0';
    messages +=
        log::stderr_line(fmt::format("lock '{}': redlock-run (pid {}) died; the watchdog "
                                     "sent SIGKILL to the command's process group ",
                                     key, parent));
    messages += '\0';
    Fd shared_low(memfd_create("rl-watchdog-lease", MFD_CLOEXEC));
    if (!shared_low) throw fail("memfd_create");
    Fd shared(fcntl(shared_low.get(), F_DUPFD_CLOEXEC, high_fd));
    if (!shared) throw fail("fcntl");
    shared_low.reset();
    shared_size_ = sizeof(Shared) + messages.size();
    if (ftruncate(shared.get(), static_cast<off_t>(shared_size_)) < 0) throw fail("ftruncate");
    void* at = mmap(nullptr, shared_size_, PROT_READ | PROT_WRITE, MAP_SHARED, shared.get(), 0);
    if (at == MAP_FAILED) throw fail("mmap");
    shared_ = static_cast<Shared*>(at);
    shared_->turn = watch_loop::watching;
    std::memcpy(shared_ + 1, messages.data(), messages.size());
    // The first deadline is there before the command exists, so there is never a moment when the
    // command runs and the watchdog has no deadline.
    extend(deadline);

    int exe = handover >= 0 ? own_binary() : -1;
    if (exe < 0) handover = -1;
    if (pid_t pid =
            how == Start::fork ? -1 : exec_watchdog(read_end.get(), shared.get(), exe, handover);
        pid > 0) {
        pid_ = pid;
        setpgid(pid, pid);  // as for the command: the group exists before anyone could signal it
        return;
    }
    ArgStrings args = arg_strings();
    pid_t pid = fork();
    // No process (a process limit, memory): the command cannot run guarded, so it is not started,
    // as when its own fork fails (Run::start records failed-to-start and releases the lock).
    if (pid < 0) {
        int err = errno;
        unmap(shared_, shared_size_);
        throw SpawnError(fmt::format("cannot start the watchdog for lock '{}': fork: {}", key,
                                     std::strerror(err)),
                         exit_code::cannot_fork);
    }
    if (pid == 0) {
        become_watchdog(read_end.get(), shared.get(), exe, handover, {});
        rename_forked(args);
        watch_loop::run(shared_);  // our mapping, shared with the parent across the fork
    }
    pid_ = pid;
    // Also from here, as for the command: the group exists before anyone could signal it.
    setpgid(pid, pid);
}

Watchdog::~Watchdog() {
    dismiss();
    unmap(shared_, shared_size_);
}

// One store: the newest deadline is the one the watchdog reads next, whatever it missed while it
// was stopped. Renewals only ever move it later.
void Watchdog::extend(Deadline deadline) const noexcept {
    __atomic_store_n(&shared_->deadline, deadline.time_since_epoch().count(), __ATOMIC_SEQ_CST);
}

// The watchdog may be acting already (the lease ended: it kills the group, then writes its
// message); it is then left to finish, and dismiss() waits for it. Otherwise it is told to
// stand back first, so that it cannot start a kill between our look and our SIGKILL.
void Watchdog::stop() noexcept {
    if (pid_ <= 0 || stopped_) return;
    stopped_ = true;
    if (watch_loop::claim(shared_, watch_loop::dismissed)) {
        ::kill(pid_, SIGKILL);
        killed_ = true;
    }
}

// The write end stays open until the destructor: the renewer thread may still call extend() after
// the command was reaped, and closing it first would read as "redlock-run died" to a watchdog
// still alive. A watchdog that is acting gets a second to write its message and exit; a stderr
// that blocks it longer (a full pipe nobody reads) costs the message, not the run.
void Watchdog::dismiss() noexcept {
    if (pid_ <= 0) return;
    stop();
    if (!killed_) {
        bool exited = false;
        if (Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid_, 0))); pidfd) {
            pollfd p{pidfd.get(), POLLIN, 0};
            Deadline until = BootClock::now() + std::chrono::seconds(1);
            for (;;) {
                int n = ::poll(&p, 1, millis_until(until));
                if (n < 0 && errno == EINTR) continue;
                exited = n > 0;
                break;
            }
        }
        if (!exited) ::kill(pid_, SIGKILL);
    }
    while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

void announce_process_group(int announce_fd, pid_t pgid) noexcept {
    if (announce_fd >= 0) write_record(announce_fd, {watch_loop::kind_group, pgid});
}

}  // namespace redlock

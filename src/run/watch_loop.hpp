// The watchdog's loop, shared by its two forms (run/watchdog.cpp says why there is a watchdog):
// the program src/watchdog_main.cpp, built without the C library, and the child that
// redlock-run forks where that program cannot run. Only system calls: the program has no
// library, and the forked child may call nothing that takes a lock (another thread of
// redlock-run, a quorum's node worker, may have held malloc's at the fork).
//
// Its inputs: fd 3, the read end of a pipe that carries one 16-byte record, the command's
// process group (and whose EOF says redlock-run died); the lease (Shared below), a memory file
// that redlock-run maps too; stderr for its two messages, to which it appends the group; and
// fds 5 and 6 for the hand-over after redlock-run died (hand_over below).
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>

#include <cstddef>
#include <cstdint>

#if __STDC_HOSTED__
#include <unistd.h>

#include <cerrno>
#endif

namespace redlock::watch_loop {

// Below PIPE_BUF, so the write is atomic.
struct Record {
    std::int64_t kind;
    std::int64_t value;
};
enum : std::int64_t { kind_group = 2 };
constexpr int pipe_fd = 3;
constexpr std::int64_t no_deadline = INT64_MAX;  // Deadline::max(): --on-lost ignore

// What redlock-run and the watchdog share, in a memory file both map: the start of the file,
// followed by the two messages (each NUL-terminated: the lease ended, redlock-run died).
// The deadline is one word that redlock-run's renewer overwrites, not a queue of records: the
// newest always wins, however long the watchdog was stopped, and nothing can be lost to a full
// pipe or read in the wrong order. The messages travel here rather than in argv so that the
// watchdog's command line is its name alone, which `pkill -f redlock-run` does not match.
struct Shared {
    std::int64_t deadline;  // CLOCK_BOOTTIME in ns; written by redlock-run, read by the watchdog
    std::int32_t turn;      // who acts on the command's group: see claim()
    std::int32_t unused;
};
// turn: the watchdog, about to kill the group, and redlock-run, about to kill the watchdog
// (the command ended), each claim it with a compare-and-swap from `watching`. Whoever loses
// stands back: redlock-run then lets the watchdog finish its kill and its message instead of
// killing it halfway (which lost the message), and a watchdog told to go kills nothing.
enum : std::int32_t { watching = 0, watchdog_acts = 1, dismissed = 2 };
constexpr int shared_fd = 4;
// The hand-over (run/handover.hpp), when redlock-run gave one: its own binary, opened when it
// started (a package upgrade meanwhile replaces the path, not this file), and the sealed memory
// file with what the hand-over needs. Both closed when there is none.
constexpr int exe_fd = 5;
constexpr int handover_fd = 6;

inline bool claim(Shared* s, std::int32_t who) {
    std::int32_t expected = watching;
    return __atomic_compare_exchange_n(&s->turn, &expected, who, false, __ATOMIC_SEQ_CST,
                                       __ATOMIC_SEQ_CST);
}

// A system call; a negative errno on failure.
#if __STDC_HOSTED__
inline long sys(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
    long r = ::syscall(n, a, b, c, d, e, f);
    return r == -1 ? -errno : r;
}
#elif defined(__x86_64__)
inline long sys(long n, long a = 0, long b = 0, long c = 0, long d = 0, long e = 0, long f = 0) {
    long ret;
    register long r10 asm("r10") = d;
    register long r8 asm("r8") = e;
    register long r9 asm("r9") = f;
    asm volatile("syscall"
                 : "=a"(ret)
                 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                 : "rcx", "r11", "memory");
    return ret;
}
#else
#error "the watchdog program is built for x86-64 only; elsewhere redlock-run forks its watchdog"
#endif

constexpr long eintr = -4;

[[noreturn]] inline void exit_now(int code) {
    for (;;) sys(SYS_exit_group, code);
}

// CLOCK_BOOTTIME in nanoseconds: BootClock's clock (util/clock.hpp), which keeps counting while
// the machine sleeps, as Redis's TTLs do.
inline std::int64_t now_ns() {
    timespec ts{};
    sys(SYS_clock_gettime, CLOCK_BOOTTIME, reinterpret_cast<long>(&ts));
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// `line`, then `group` in decimal and a newline, on stderr.
inline void report(const char* line, long group) {
    std::size_t length = 0;
    while (line[length] != '\0') ++length;
    char digits[24];
    char* end = digits + sizeof digits;
    char* p = end;
    *--p = '\n';
    auto g = static_cast<unsigned long>(group);
    do *--p = static_cast<char>('0' + g % 10);
    while ((g /= 10) != 0 && p > digits);
    iovec parts[2] = {{const_cast<char*>(line), length}, {p, static_cast<std::size_t>(end - p)}};
    while (sys(SYS_writev, 2, reinterpret_cast<long>(parts), 2) == eintr) {
    }
}

// Whether `group`, as announced, may be killed as the command's process group. kill(-1) would
// SIGKILL every process we may signal, kill(0) and our own group the watchdog itself, and
// redlock-run's group redlock-run and maybe its caller's shell; so only a live process that leads
// a group of its own (the command made its group before announcing it), and neither ours nor our
// parent's.
inline bool is_command_group(std::int64_t group) {
    if (group <= 1 || group > INT32_MAX) return false;
    if (group == sys(SYS_getpgid, 0) || group == sys(SYS_getpgid, sys(SYS_getppid))) return false;
    return sys(SYS_getpgid, static_cast<long>(group)) == group;
}

// After redlock-run died and `group` was sent SIGKILL: executes redlock-run as `rl-handover`,
// which finds its inputs on exe_fd and handover_fd, waits until no process of `group` runs any
// more, records the run and releases the lock (run/handover.hpp). Its argv is that name and the
// group, its environment empty: the token and the password travel in the sealed file, never
// where ps or /proc/<pid>/environ shows them. Without a hand-over, or when the exec fails, this
// process exits, and the lock expires by itself.
[[noreturn]] inline void hand_over(long group) {
    if (sys(SYS_fcntl, handover_fd, 1 /* F_GETFD */) >= 0) {
        char digits[24];
        char* p = digits + sizeof digits;
        *--p = '\0';
        auto g = static_cast<unsigned long>(group);
        do *--p = static_cast<char>('0' + g % 10);
        while ((g /= 10) != 0 && p > digits);
        const char* argv[] = {"rl-handover", p, nullptr};
        const char* envp[] = {nullptr};
        sys(SYS_execveat, exe_fd, reinterpret_cast<long>(""), reinterpret_cast<long>(argv),
            reinterpret_cast<long>(envp), 0x1000 /* AT_EMPTY_PATH */);
    }
    exit_now(0);
}

// Kills by process group id, which is safe only while that id cannot name another group: the id
// stays reserved while the leader exists, even as a zombie. While redlock-run lives it never reaps
// the leader before this watchdog has exited and been reaped (Child::reap), so every kill below
// reaches the command's group or nobody. When redlock-run dies, the kernel closes its files (our
// EOF) before it reparents the leader and sends it PR_SET_PDEATHSIG; the id could only be reused
// after init reaped the leader, every other member died, and the pid counter wrapped around to it,
// while this process, woken first, is a single poll(2) return away from its kill.
// The kill comes before the message: a stderr nobody reads must not delay it. redlock-run waits
// for the message once this process has claimed its turn (Shared::turn), and when it claimed
// first (the command ended by itself) there is nothing to kill: this process just exits.
// When redlock-run died (`then_hand_over`), the kill is followed by the hand-over, and only then:
// the command must be gone before another holder may take the lock.
[[noreturn]] inline void kill_group_and_exit(Shared* s, long group, const char* line,
                                             bool then_hand_over = false) {
    if (!claim(s, watchdog_acts)) exit_now(0);
    sys(SYS_kill, -group, SIGKILL);
    report(line, group);
    if (then_hand_over) hand_over(group);
    exit_now(0);
}

// The watchdog's whole life: reads the pipe until EOF and enforces the deadline in `s`, whose
// messages redlock-run formatted and escaped.
[[noreturn]] inline void run(Shared* s) {
    // A name of its own in ps and top, beside the command it guards.
    sys(SYS_prctl, PR_SET_NAME, reinterpret_cast<long>("rl-watchdog"));
    const char* lease_ended = reinterpret_cast<const char*>(s + 1);
    const char* parent_died = lease_ended;
    while (*parent_died != '\0') ++parent_died;
    ++parent_died;
    long group = 0;
    for (;;) {
        int timeout = -1;
        if (group > 0) {
            // The clock first, then the deadline: every renewal that ended before this moment
            // has stored its deadline already, so a lease renewed in time is never taken for
            // ended, however long this process was stopped or starved before this line.
            std::int64_t now = now_ns();
            std::int64_t deadline = __atomic_load_n(&s->deadline, __ATOMIC_SEQ_CST);
            if (deadline != no_deadline) {
                std::int64_t left = deadline - now;
                if (left <= 0) kill_group_and_exit(s, group, lease_ended);
                // Never wake before the deadline; a renewal meanwhile is read when it comes.
                std::int64_t ms = (left + 999'999) / 1'000'000;
                timeout = ms > INT32_MAX ? INT32_MAX : static_cast<int>(ms);
            }
        }
        pollfd p{pipe_fd, POLLIN, 0};
        // ppoll, not poll: the only one every architecture has.
        timespec wait{timeout / 1000, (timeout % 1000) * 1'000'000L};
        long n = sys(SYS_ppoll, reinterpret_cast<long>(&p), 1,
                     timeout < 0 ? 0 : reinterpret_cast<long>(&wait), 0);
        if (n == eintr || n == 0) continue;
        if (n < 0) exit_now(70);
        Record r{};
        long got = sys(SYS_read, pipe_fd, reinterpret_cast<long>(&r), sizeof r);
        if (got == eintr) continue;
        if (got == 0) {
            // Every write end is gone: redlock-run died (its end is close-on-exec in the command,
            // and this process holds none). Nobody renews the lock any more.
            // No hand-over without a group killed: a command that this process does not know
            // of may still run, and must not find its lock given to another holder.
            if (group > 0) kill_group_and_exit(s, group, parent_died, true);
            exit_now(0);
        }
        if (got != sizeof r) exit_now(70);
        // The first group that is one, and only it: the command announces its group once.
        if (r.kind == kind_group && group == 0 && is_command_group(r.value))
            group = static_cast<long>(r.value);
    }
}

// The program's way to the shared file: maps the memory file on shared_fd (its size is where
// lseek to the end lands), or exits 70. The last byte is made a NUL, so the messages end.
inline Shared* map_shared() {
    long size = sys(SYS_lseek, shared_fd, 0, 2 /* SEEK_END */);
    if (size < static_cast<long>(sizeof(Shared)) + 2) exit_now(70);
    long addr = sys(SYS_mmap, 0, size, PROT_READ | PROT_WRITE, MAP_SHARED, shared_fd, 0);
    if (addr < 0) exit_now(70);
    sys(SYS_close, shared_fd);
    reinterpret_cast<char*>(addr)[size - 1] = '\0';
    return reinterpret_cast<Shared*>(addr);
}

}  // namespace redlock::watch_loop

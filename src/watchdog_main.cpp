// rl-watchdog: the watchdog process's whole program (watchdog.cpp says why there is one). It is
// built without the C library, embedded in redlock-run, and started with vfork and execveat from
// a memory file: a fork of redlock-run cost a locked `true` more than flock's whole overhead on a
// 2-core VM (its page tables copied, then every page either process wrote faulted again), while
// this program's exec maps two pages and runs a few hundred instructions before it waits.
//
// Its inputs, set up by redlock-run's vfork child: fd 3, the read end of the pipe that carries the
// deadline and the command's process group (16-byte records, watchdog.cpp); stderr for its two
// messages, argv[1] (the lease ended) and argv[2] (redlock-run died), to which it appends the
// group; every signal blocked, so that only SIGKILL ends it; its own process group.
//
// Only system calls, no library: nothing here may need initialising, and the compiler is told
// not to emit stack protection or unwind tables (CMakeLists.txt).
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>

#include <cstddef>
#include <cstdint>

#if !defined(__x86_64__)
#error "rl-watchdog is built for x86-64 only; elsewhere redlock-run forks its watchdog"
#endif

namespace {

long sys(long n, long a = 0, long b = 0, long c = 0, long d = 0) {
    long ret;
    register long r10 asm("r10") = d;
    asm volatile("syscall"
                 : "=a"(ret)
                 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
                 : "rcx", "r11", "memory");
    return ret;
}

constexpr long eintr = -4;
constexpr int pipe_fd = 3;
constexpr std::int64_t kind_deadline = 1, kind_group = 2;
constexpr std::int64_t no_deadline = INT64_MAX;

struct Record {
    std::int64_t kind;
    std::int64_t value;
};

// CLOCK_BOOTTIME in nanoseconds: BootClock's clock (util/clock.hpp), which keeps counting while
// the machine sleeps, as Redis's TTLs do.
std::int64_t now_ns() {
    timespec ts{};
    sys(SYS_clock_gettime, CLOCK_BOOTTIME, reinterpret_cast<long>(&ts));
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::size_t length(const char* s) {
    std::size_t n = 0;
    while (s[n] != '\0') ++n;
    return n;
}

// `line` (ending in a space), then `group` in decimal and a newline, on stderr.
void report(const char* line, long group) {
    char digits[24];
    char* end = digits + sizeof digits;
    char* p = end;
    *--p = '\n';
    auto g = static_cast<unsigned long>(group);
    do *--p = static_cast<char>('0' + g % 10);
    while ((g /= 10) != 0 && p > digits);
    iovec parts[2] = {{const_cast<char*>(line), length(line)},
                      {p, static_cast<std::size_t>(end - p)}};
    while (sys(SYS_writev, 2, reinterpret_cast<long>(parts), 2) == eintr) {
    }
}

// Kills by process group id; watchdog.cpp says why the id cannot name another group by then.
[[noreturn]] void kill_group_and_exit(long group, const char* line) {
    sys(SYS_kill, -group, SIGKILL);
    report(line, group);
    sys(SYS_exit_group, 0);
    __builtin_unreachable();
}

[[noreturn]] void watch(const char* lease_ended, const char* parent_died) {
    sys(SYS_prctl, PR_SET_NAME, reinterpret_cast<long>("rl-watchdog"));
    std::int64_t deadline = no_deadline;
    long group = 0;
    for (;;) {
        int timeout = -1;
        if (group > 0 && deadline != no_deadline) {
            std::int64_t left = deadline - now_ns();
            if (left <= 0) kill_group_and_exit(group, lease_ended);
            std::int64_t ms = (left + 999'999) / 1'000'000;  // never wake before the deadline
            timeout = ms > INT32_MAX ? INT32_MAX : static_cast<int>(ms);
        }
        pollfd p{pipe_fd, POLLIN, 0};
        long n = sys(SYS_poll, reinterpret_cast<long>(&p), 1, timeout);
        if (n == eintr || n == 0) continue;
        if (n < 0) sys(SYS_exit_group, 70);
        Record r{};
        long got = sys(SYS_read, pipe_fd, reinterpret_cast<long>(&r), sizeof r);
        if (got == eintr) continue;
        if (got == 0) {
            // Every write end is gone: redlock-run died (its end is close-on-exec in the command,
            // and this process holds none). Nobody renews the lock any more.
            if (group > 0) kill_group_and_exit(group, parent_died);
            sys(SYS_exit_group, 0);
        }
        if (got != sizeof r) sys(SYS_exit_group, 70);
        if (r.kind == kind_deadline) deadline = r.value;
        if (r.kind == kind_group) group = static_cast<long>(r.value);
    }
}

}  // namespace

// The compiler may call these for copies and zeroing even here.
extern "C" void* memset(void* d, int c, std::size_t n) {
    auto* p = static_cast<unsigned char*>(d);
    while (n-- > 0) *p++ = static_cast<unsigned char>(c);
    return d;
}
extern "C" void* memcpy(void* d, const void* s, std::size_t n) {
    auto* p = static_cast<unsigned char*>(d);
    const auto* q = static_cast<const unsigned char*>(s);
    while (n-- > 0) *p++ = *q++;
    return d;
}

// The entry point: the kernel leaves argc, then argv, on the stack.
extern "C" [[noreturn]] void watchdog_entry(long* sp) {
    long argc = sp[0];
    char** argv = reinterpret_cast<char**>(sp + 1);
    if (argc < 3) sys(SYS_exit_group, 64);
    watch(argv[1], argv[2]);
}

asm(".text\n"
    ".global _start\n"
    "_start:\n"
    "  xor %rbp, %rbp\n"
    "  mov %rsp, %rdi\n"
    "  and $-16, %rsp\n"
    "  call watchdog_entry\n"
    "  hlt\n");

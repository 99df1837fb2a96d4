// rl-watchdog: the watchdog's program (run/watchdog.cpp says why there is a watchdog, and
// run/watch_loop.hpp is its loop). It is built without the C library, embedded in redlock-run,
// and started with vfork and execveat from a sealed memory file: a fork of redlock-run cost a
// locked `true` 2.2 ms on a 2-core VM (its page tables copied, then every page either process
// wrote faulting again while the watchdog lived), and this program's exec 0.6 ms.
//
// redlock-run's vfork child sets up what the loop reads (fd 3, the shared memory file on fd 4
// with the lease and the two messages, stderr), a process group of its own and every signal
// blocked, so that only SIGKILL ends it; its argv is its name alone. Nothing here may need
// initialising: the compiler is told not to emit stack
// protection or unwind tables (CMakeLists.txt).
#include <cstddef>

#include "run/watch_loop.hpp"

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

// The entry point (the kernel leaves argc, then argv, on the stack; neither is needed).
extern "C" [[noreturn]] void watchdog_entry(long*) {
    redlock::watch_loop::run(redlock::watch_loop::map_shared());
}

asm(".text\n"
    ".global _start\n"
    "_start:\n"
    "  xor %rbp, %rbp\n"
    "  mov %rsp, %rdi\n"
    "  and $-16, %rsp\n"
    "  call watchdog_entry\n"
    "  hlt\n");

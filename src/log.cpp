#include "log.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace redlock::log {
namespace {
std::atomic<bool> verbose_on{false};
}

void set_verbose(bool on) { verbose_on = on; }
bool verbose_enabled() { return verbose_on; }

void emit(Level, const std::string& message) {
    std::string line = "redlock-run: " + message + "\n";
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        ssize_t n = ::write(STDERR_FILENO, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

}  // namespace redlock::log

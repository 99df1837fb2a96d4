#include "util/log.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "util/excerpt.hpp"
#include "util/syslog_sink.hpp"
#include "util/utf8.hpp"

namespace redlock::log {
namespace {
std::atomic<bool> verbose_on{false};
std::atomic<bool> syslog_on{false};

syslog_sink::Severity severity_of(Level level) {
    switch (level) {
        case Level::error:
            return syslog_sink::Severity::err;
        case Level::warning:
            return syslog_sink::Severity::warning;
        case Level::info:
            return syslog_sink::Severity::notice;
        case Level::verbose:
            break;
    }
    return syslog_sink::Severity::info;
}
}  // namespace

void set_verbose(bool on) {
    verbose_on = on;
}
bool verbose_enabled() {
    return verbose_on;
}
void set_syslog(bool on) {
    syslog_on = on;
}

bool syslog_enabled() {
    return syslog_on;
}

// Lock names and Redis error texts are arbitrary bytes: a newline in one would forge a second
// message (in cron mail, in syslog) and an escape sequence would drive the operator's terminal.
// Control characters (C0, DEL, and C1: 0x9b alone is a terminal's CSI, as is its UTF-8 form
// C2 9B) and bytes that are not UTF-8 are shown as \xNN; everything else passes unchanged.
namespace {
std::string one_line(std::string_view message) {
    std::string out;
    out.reserve(message.size());
    for (std::size_t i = 0; i < message.size();) {
        auto c = static_cast<unsigned char>(message[i]);
        std::size_t len = utf8_sequence(message, i);
        bool c1 = len == 2 && c == 0xC2 && static_cast<unsigned char>(message[i + 1]) < 0xA0;
        if (len > 1 && !c1) {
            out.append(message.substr(i, len));
            i += len;
            continue;
        }
        for (std::size_t end = i + (len == 0 ? 1 : len); i < end; ++i) {
            c = static_cast<unsigned char>(message[i]);
            if (c < 0x20 || c >= 0x7f)
                out += fmt::format("\\x{:02x}", c);
            else
                out += static_cast<char>(c);
        }
    }
    return out;
}
}  // namespace

// A line long enough for any message of ours with a 1 KiB key and holder command in it; a
// longer one can only come from quoting something hostile (a server's 100 KB error reply).
constexpr std::size_t max_message_bytes = 4096;

std::string stderr_line(std::string_view message) {
    return "redlock-run: " + excerpt(one_line(message), max_message_bytes);
}

void emit(Level level, const std::string& raw) {
    std::string message = excerpt(one_line(raw), max_message_bytes);
    if (syslog_on) syslog_sink::send(severity_of(level), message);
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

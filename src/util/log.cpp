#include "util/log.hpp"

#include <sys/ioctl.h>
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
// A status line is on the terminal (log::status): the next message starts by erasing it.
std::atomic<bool> status_shown{false};

// Carriage return, then ECMA-48 "erase in line" (to its end): the cursor is back at the start
// of an empty line.
constexpr std::string_view erase_line = "\r\x1b[K";

void write_stderr(std::string_view bytes) {
    const char* p = bytes.data();
    std::size_t left = bytes.size();
    while (left > 0) {
        ssize_t n = ::write(STDERR_FILENO, p, left);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

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
    std::string line;
    // One write: the erase and the message cannot be torn apart by another thread's message.
    if (status_shown.exchange(false)) line = erase_line;
    line += "redlock-run: " + message + "\n";
    write_stderr(line);
}

void status(const std::string& text) {
    std::string line(erase_line);
    line += "redlock-run: ";
    line += one_line(text);
    // A line that wraps could no longer be erased by a carriage return: cut it to one column
    // less than the terminal's width (a cursor in the last column wraps on some terminals),
    // counting UTF-8 characters as one column each.
    winsize ws{};
    if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1) {
        std::size_t columns = 0;
        std::size_t limit = ws.ws_col - 1u + erase_line.size();
        for (std::size_t i = 0; i < line.size(); ++columns) {
            if (columns == limit) {
                line.resize(i);
                break;
            }
            std::size_t len = utf8_sequence(line, i);
            i += len == 0 ? 1 : len;
        }
    }
    write_stderr(line);
    status_shown = true;
}

void clear_status() {
    if (status_shown.exchange(false)) write_stderr(erase_line);
}

}  // namespace redlock::log

// Messages to the operator: one line each, "redlock-run: ...", on stderr (and syslog with
// --syslog). Safe to call from the renewer thread (each line is one write(2) or send(2)).
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace redlock::log {

enum class Level { error, warning, info, verbose };

void set_verbose(bool on);
// --syslog: every message also goes to the local syslog (facility user, tag "redlock-run", with
// our pid): error -> LOG_ERR, warning -> LOG_WARNING, info -> LOG_NOTICE, verbose -> LOG_INFO.
void set_syslog(bool on);
bool syslog_enabled();
bool verbose_enabled();
void emit(Level level, const std::string& message);
// A live status line on stderr (the caller checks that stderr is a terminal): drawn over the
// previous one (carriage return, erase line), cut to the terminal's width so that it never wraps,
// and cleared by clear_status() or by the next message emit() writes. Main thread only.
void status(const std::string& text);
void clear_status();
// The bytes emit() writes to stderr for `message`, without the newline: for a forked child that
// may not format (or allocate) itself.
std::string stderr_line(std::string_view message);

template <typename... Args>
void error(fmt::format_string<Args...> f, Args&&... args) {
    emit(Level::error, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void warning(fmt::format_string<Args...> f, Args&&... args) {
    emit(Level::warning, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void info(fmt::format_string<Args...> f, Args&&... args) {
    emit(Level::info, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
void verbose(fmt::format_string<Args...> f, Args&&... args) {
    if (verbose_enabled()) emit(Level::verbose, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace redlock::log

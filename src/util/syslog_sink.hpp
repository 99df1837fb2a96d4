// A minimal syslog client: RFC 3164 lines, as glibc's syslog(3) writes them, sent to the local
// log socket. Our own rather than syslog(3) so that the tests can point it at a socket of their
// own (REDLOCK_SYSLOG_SOCKET; default /dev/log) and check what arrives.
#pragma once

#include <string>
#include <string_view>

namespace redlock::syslog_sink {

// Severities from RFC 5424 (same values as <syslog.h>'s LOG_ERR ... LOG_INFO).
enum class Severity { err = 3, warning = 4, notice = 5, info = 6 };

// "<13>Dec  2 14:56:10 redlock-run[4120]: message": facility user, our pid, local time.
std::string format_line(Severity severity, std::string_view message, long pid, long long unix_time);

// Sends one message; thread-safe. Failures are silent, as with syslog(3): no syslog daemon must
// never stop the command from running.
void send(Severity severity, std::string_view message);

}  // namespace redlock::syslog_sink

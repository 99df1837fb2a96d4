#include "util/syslog_sink.hpp"

#include <fmt/format.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#include "util/fd.hpp"

namespace redlock::syslog_sink {
namespace {

constexpr int facility_user = 1;

std::mutex mutex;
Fd sock;
bool stream = false;  // some systems' /dev/log is a stream socket; messages then end in NUL

std::string socket_path() {
    const char* p = std::getenv("REDLOCK_SYSLOG_SOCKET");
    return p && *p ? p : "/dev/log";
}

bool connect_to(const std::string& path, int type) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) return false;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    Fd fd(::socket(AF_UNIX, type | SOCK_CLOEXEC, 0));
    if (!fd) return false;
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) < 0)
        return false;
    sock = std::move(fd);
    stream = type == SOCK_STREAM;
    return true;
}

bool ensure_connected() {
    if (sock) return true;
    std::string path = socket_path();
    return connect_to(path, SOCK_DGRAM) || connect_to(path, SOCK_STREAM);
}

bool send_once(const std::string& line) {
    if (!ensure_connected()) return false;
    const char* p = line.data();
    std::size_t left = line.size() + (stream ? 1 : 0);  // c_str()'s NUL ends a stream record
    while (left > 0) {
        // Never block the supervising loop on a slow daemon: a full queue drops the line.
        ssize_t n = ::send(sock.get(), p, left, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        if (n <= 0) {
            sock.reset();
            return false;
        }
        if (!stream) return true;
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

std::string format_line(Severity severity, std::string_view message, long pid,
                        long long unix_time) {
    std::time_t t = static_cast<std::time_t>(unix_time);
    std::tm tm{};
    localtime_r(&t, &tm);
    char stamp[32] = "";
    std::strftime(stamp, sizeof stamp, "%b %e %H:%M:%S", &tm);
    return fmt::format("<{}>{} redlock-run[{}]: {}", facility_user * 8 + static_cast<int>(severity),
                       stamp, pid, message);
}

void send(Severity severity, std::string_view message) {
    std::string line = format_line(severity, message, static_cast<long>(::getpid()),
                                   static_cast<long long>(std::time(nullptr)));
    std::lock_guard lock(mutex);
    // A syslog daemon that restarted left our socket dangling: one fresh connection, then give up.
    if (!send_once(line)) send_once(line);
}

}  // namespace redlock::syslog_sink

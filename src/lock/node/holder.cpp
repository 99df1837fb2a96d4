#include "lock/node/holder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "util/duration.hpp"
#include "util/printable.hpp"

namespace redlock {

std::string command_line_summary(const std::vector<std::string>& command, std::size_t limit) {
    std::string line;
    for (const auto& word : command) {
        if (!line.empty()) line += ' ';
        line += word;
    }
    if (line.size() <= limit) return line;
    std::size_t cut = limit >= 3 ? limit - 3 : 0;
    // Never split a UTF-8 sequence: back up over continuation bytes (10xxxxxx).
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
    line.resize(cut);
    return line + "...";
}

namespace {

// The whole of a small file, or nullopt when it cannot be read or is larger than `limit`.
std::optional<std::string> small_file(const char* path, std::size_t limit) {
    int fd = ::open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return std::nullopt;
    std::string text;
    char buf[16384];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 || text.size() + static_cast<std::size_t>(n) > limit) {
            ::close(fd);
            return std::nullopt;
        }
        text.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return text;
}

bool is_blank(char c) {
    return c == ' ' || c == '\t';
}

// Our effective user's name, as getpwuid(geteuid()) gives it. getpwuid's first call costs ~60 us
// here (it tries nscd's socket twice, parses nsswitch.conf, sets up the name service switch),
// a tenth of what a locked `true` costs over flock. Where nsswitch.conf consults the files source
// first, with the default action, the first /etc/passwd entry for the uid is exactly getpwuid's
// answer, and reading the two files costs ~6 us. Anything else (another source first, an action,
// the uid only in LDAP, NIS markers, an unreadable file) asks getpwuid itself, so the name is
// never a guess; the uid in decimal only when no source knows it.
std::string effective_user_name() {
    uid_t uid = geteuid();
    if (auto conf = small_file("/etc/nsswitch.conf", 1 << 20);
        conf && nsswitch_passwd_files_first(*conf))
        if (auto passwd = small_file("/etc/passwd", 16 << 20))
            if (auto name = passwd_file_user(*passwd, uid)) return *name;
    passwd pw{};
    passwd* found = nullptr;
    char buf[4096];
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found) return found->pw_name;
    return std::to_string(uid);
}

}  // namespace

bool nsswitch_passwd_files_first(std::string_view conf) {
    std::optional<std::string_view> sources;
    while (!conf.empty()) {
        std::size_t eol = conf.find('\n');
        std::string_view line = conf.substr(0, eol);
        conf.remove_prefix(eol == std::string_view::npos ? conf.size() : eol + 1);
        line = line.substr(0, line.find('#'));
        while (!line.empty() && is_blank(line.front())) line.remove_prefix(1);
        if (line.substr(0, 7) != "passwd:") continue;
        if (sources) return false;  // which one counts is glibc's business
        sources = line.substr(7);
    }
    if (!sources) return false;  // glibc's built-in default: not worth mirroring
    std::string_view rest = *sources;
    while (!rest.empty() && is_blank(rest.front())) rest.remove_prefix(1);
    if (rest.substr(0, 5) != "files") return false;
    rest.remove_prefix(5);
    if (!rest.empty() && !is_blank(rest.front())) return false;  // "filesx": another source
    while (!rest.empty() && is_blank(rest.front())) rest.remove_prefix(1);
    // "files [SUCCESS=continue] ..." could let a later source answer: leave that to glibc.
    return rest.empty() || rest.front() != '[';
}

std::optional<std::string> passwd_file_user(std::string_view passwd, uid_t uid) {
    while (!passwd.empty()) {
        std::size_t eol = passwd.find('\n');
        std::string_view line = passwd.substr(0, eol);
        passwd.remove_prefix(eol == std::string_view::npos ? passwd.size() : eol + 1);
        while (!line.empty() && is_blank(line.front())) line.remove_prefix(1);
        if (line.empty() || line.front() == '#') continue;  // glibc skips these too
        if (line.front() == '+' || line.front() == '-') return std::nullopt;
        // name:password:uid:...; a line whose uid is not a decimal number is skipped, as glibc's
        // parser skips it.
        std::size_t c1 = line.find(':');
        if (c1 == std::string_view::npos || c1 == 0) continue;
        std::size_t c2 = line.find(':', c1 + 1);
        if (c2 == std::string_view::npos) continue;
        std::size_t c3 = line.find(':', c2 + 1);
        std::string_view field =
            line.substr(c2 + 1, c3 == std::string_view::npos ? c3 : c3 - c2 - 1);
        if (field.empty() || field.size() > 10) continue;
        unsigned long long v = 0;
        bool digits = true;
        for (char c : field) {
            if (c < '0' || c > '9') digits = false;
            v = v * 10 + static_cast<unsigned>(c - '0');
        }
        if (digits && v == uid) return std::string(line.substr(0, c1));
    }
    return std::nullopt;
}

// Host and user are looked up once per process: the ledger's record of the run asks again after
// the command, and neither can have changed in between for our purpose (the hold was taken in
// their name).
HolderInfo this_process_info(const std::vector<std::string>& command) {
    static const std::pair<std::string, std::string> host_and_user = [] {
        char host[HOST_NAME_MAX + 1] = {};
        std::string name = gethostname(host, sizeof host - 1) == 0 ? host : "";
        return std::pair{name, effective_user_name()};
    }();
    HolderInfo info;
    info.host = host_and_user.first;
    info.pid = getpid();
    info.user = host_and_user.second;
    info.command = command_line_summary(command, max_recorded_command);
    return info;
}

std::string describe_holder(const AcquireResult& busy) {
    std::string expiry =
        busy.holder_pttl >= 0
            ? fmt::format("expires in {}", format_duration(Millis(busy.holder_pttl)))
            : std::string("with no expiry set");
    if (busy.shared) {
        // No one holder: how many share it, and one of them by name when one recorded its info.
        long long n = busy.shared_holders;
        std::string who = n > 0 ? fmt::format("{} shared holder{}", n, n == 1 ? "" : "s")
                                : std::string("shared holders");
        if (busy.holder && !busy.holder->host.empty()) {
            AcquireResult one;
            one.holder = busy.holder;
            std::string named = describe_holder(one);
            named.resize(named.rfind(", "));  // its own expiry is not the lock's
            who += n > 1 ? fmt::format(" ({} and {} more)", named, n - 1)
                         : fmt::format(" ({})", named);
        }
        return who + ", " + expiry;
    }
    if (!busy.holder || busy.holder->host.empty()) return "an unknown holder, " + expiry;
    const HolderInfo& h = *busy.holder;
    // Host and user come from Redis as any bytes: escaped, they cannot forge lines or drive a
    // terminal (or a syslog reader).
    std::string who = fmt::format("{} pid {}", printable(h.host), h.pid);
    if (!h.user.empty()) who += fmt::format(" (user {})", printable(h.user));
    if (h.now_ms > 0 && h.acquired_ms > 0 && h.now_ms >= h.acquired_ms) {
        // Whole seconds read better than "12m3.512s"; below a second, milliseconds.
        long long age = h.now_ms - h.acquired_ms;
        if (age >= 1000) age -= age % 1000;
        who += fmt::format(" for {}", format_duration(Millis(age)));
    }
    return who + ", " + expiry;
}

}  // namespace redlock

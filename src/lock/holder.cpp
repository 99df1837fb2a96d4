#include "lock/holder.hpp"

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

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

HolderInfo this_process_info(const std::vector<std::string>& command) {
    HolderInfo info;
    char host[HOST_NAME_MAX + 1] = {};
    if (gethostname(host, sizeof host - 1) == 0) info.host = host;
    info.pid = getpid();
    uid_t uid = geteuid();
    passwd pw{};
    passwd* found = nullptr;
    char buf[4096];
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found)
        info.user = found->pw_name;
    else
        info.user = std::to_string(uid);
    info.command = command_line_summary(command, max_recorded_command);
    return info;
}

std::string describe_holder(const AcquireResult& busy) {
    std::string expiry =
        busy.holder_pttl >= 0
            ? fmt::format("expires in {}", format_duration(Millis(busy.holder_pttl)))
            : std::string("with no expiry set");
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

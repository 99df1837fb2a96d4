#include "lock/holder_info.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "lock/lock_replies.hpp"

namespace redlock {

std::vector<std::string> HolderInfo::own_fields() const {
    std::vector<std::string> fields{"host", host, "pid", std::to_string(pid), "user", user};
    // The command line only with --hold-info: it may carry secrets, and the rest is recorded by
    // default.
    if (!command.empty()) fields.insert(fields.end(), {"command", command});
    if (ledger_size > 0) fields.insert(fields.end(), {"ledger", std::to_string(ledger_size)});
    return fields;
}

HolderInfo HolderInfo::from_fields(const std::vector<std::string>& flat) {
    HolderInfo info;
    // 0 (unknown) for anything but a decimal in [0, hi]: the values come from the server, and
    // "held for" subtracts them.
    auto number = [](const std::string& s, long long hi = max_unix_seconds * 1000) {
        char* end = nullptr;
        errno = 0;
        long long v = std::strtoll(s.c_str(), &end, 10);
        if (s.empty() || *end != '\0' || errno == ERANGE || v < 0 || v > hi) return 0LL;
        return v;
    };
    for (std::size_t i = 0; i + 1 < flat.size(); i += 2) {
        const std::string& k = flat[i];
        const std::string& v = flat[i + 1];
        if (k == "token")
            info.token = v;
        else if (k == "fence")
            info.fence = number(v, fence_limit - 1);
        else if (k == "ttl_ms")
            info.ttl_ms = number(v, max_server_ttl.count());
        else if (k == "acquired_ms")
            info.acquired_ms = number(v);
        else if (k == "host")
            info.host = v;
        else if (k == "pid")
            info.pid = number(v, INT_MAX);
        else if (k == "user")
            info.user = v;
        else if (k == "command")
            info.command = v;
        else if (k == "now_ms")
            info.now_ms = number(v);
    }
    return info;
}

std::optional<HolderInfo> holder_from_reply(const redisReply& r, std::size_t first) {
    if (r.type != REDIS_REPLY_ARRAY || r.elements <= first) return std::nullopt;
    std::vector<std::string> flat;
    for (std::size_t i = first; i < r.elements; ++i)
        flat.push_back(r.element[i]->str ? std::string(r.element[i]->str, r.element[i]->len)
                                         : std::string());
    return HolderInfo::from_fields(flat);
}

}  // namespace redlock

#include "lock/holder_info.hpp"

#include <cstdlib>

namespace redlock {

std::vector<std::string> HolderInfo::own_fields() const {
    return {"host", host, "pid", std::to_string(pid), "user", user, "command", command};
}

HolderInfo HolderInfo::from_fields(const std::vector<std::string>& flat) {
    HolderInfo info;
    auto number = [](const std::string& s) { return std::strtoll(s.c_str(), nullptr, 10); };
    for (std::size_t i = 0; i + 1 < flat.size(); i += 2) {
        const std::string& k = flat[i];
        const std::string& v = flat[i + 1];
        if (k == "token")
            info.token = v;
        else if (k == "fence")
            info.fence = number(v);
        else if (k == "ttl_ms")
            info.ttl_ms = number(v);
        else if (k == "acquired_ms")
            info.acquired_ms = number(v);
        else if (k == "host")
            info.host = v;
        else if (k == "pid")
            info.pid = number(v);
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

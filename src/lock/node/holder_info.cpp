#include "lock/node/holder_info.hpp"

#include <climits>

#include "lock/ledger/bounds.hpp"
#include "util/number.hpp"

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
        return parse_integer(s, 0, hi).value_or(0);
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

std::optional<HolderInfo> holder_from_reply(ReplyView r, std::size_t first) {
    if (r.size() <= first) return std::nullopt;  // size() is 0 for a reply that is no array
    std::vector<std::string> flat;
    for (std::size_t i = first; i < r.size(); ++i) flat.emplace_back(r[i].text());
    return HolderInfo::from_fields(flat);
}

}  // namespace redlock

#include "lock/eviction_check.hpp"

#include <string_view>

#include "util/log.hpp"

namespace redlock {

void warn_if_evicting(Connection& conn) {
    Reply reply;
    try {
        reply = conn.command({"CONFIG", "GET", "maxmemory-policy"});
    } catch (const std::exception& e) {
        log::verbose("could not read maxmemory-policy from {}: {}", conn.endpoint().describe(),
                     e.what());
        return;
    }
    // A refused CONFIG is an error reply; an unknown parameter is an empty array.
    const redisReply& r = *reply;
    if (r.type != REDIS_REPLY_ARRAY || r.elements < 2 || r.element[1]->type != REDIS_REPLY_STRING)
        return;
    std::string_view policy(r.element[1]->str, r.element[1]->len);
    if (policy == "noeviction") return;
    log::warning(
        "Redis at {} has maxmemory-policy {}: under memory pressure it may evict a lock key, "
        "which silently frees the lock; set maxmemory-policy noeviction",
        conn.endpoint().describe(), policy);
}

}  // namespace redlock

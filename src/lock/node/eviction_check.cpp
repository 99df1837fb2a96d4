#include "lock/node/eviction_check.hpp"

#include <string_view>

#include "util/log.hpp"

namespace redlock {

void warn_if_evicting(Connection& conn, std::string_view lock_key) {
    // CONFIG GET names no key: over Redis Cluster it goes to the home key's master, and only the
    // master of the lock key's slot can evict the lock (the others' policies say nothing of it).
    conn.set_home_key(lock_key);
    Reply reply;
    try {
        reply = conn.command(eviction_policy_query());
    } catch (const std::exception& e) {
        log::verbose("could not read maxmemory-policy from {}: {}", conn.endpoint().describe(),
                     e.what());
        return;
    }
    warn_if_evicting(conn, reply);
}

std::vector<std::string> eviction_policy_query() {
    return {"CONFIG", "GET", "maxmemory-policy"};
}

void warn_if_evicting(const Connection& conn, const Reply& reply) {
    // A refused CONFIG is an error reply; an unknown parameter is an empty array.
    if (reply->size() < 2 || !(*reply)[1].is_string()) return;  // size() is 0 for a non-array
    std::string_view policy = (*reply)[1].text();
    if (policy == "noeviction") return;
    log::warning(
        "Redis at {} has maxmemory-policy {}{}: under memory pressure it may evict a lock key, "
        "which silently frees the lock; set maxmemory-policy noeviction",
        conn.endpoint().describe(), policy,
        conn.endpoint().is_cluster() ? " on the master that holds the lock" : "");
}

}  // namespace redlock

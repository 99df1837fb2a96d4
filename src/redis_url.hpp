// Where Redis is and how to log in: parsed from redis://, unix:// URLs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redlock {

struct Endpoint {
    std::string host;  // empty for a unix socket
    int port = 6379;
    std::string socket_path;  // set for unix:// URLs
    std::string user;         // ACL user; empty means the default user
    std::optional<std::string> password;
    int db = 0;
    // redis-cluster:// (cluster_url.hpp): the seed nodes, each with these credentials; host and
    // port above are the first seed's. Empty for a single node.
    std::vector<Endpoint> cluster_seeds;

    bool is_unix() const { return !socket_path.empty(); }
    bool is_cluster() const { return !cluster_seeds.empty(); }
    // "127.0.0.1:6379", "[::1]:6380", "unix:/run/redis.sock"; never shows the password.
    std::string describe() const;
};

// redis://[user[:password]@]host[:port][/db], IPv6 as [::1], unix:///path[?db=N], and
// redis-cluster://seed,seed... (cluster_url.hpp).
// Throws UsageError with the reason; the message never repeats a password.
Endpoint parse_redis_url(std::string_view url);

}  // namespace redlock

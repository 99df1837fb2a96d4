// Where Redis is and how to log in: parsed from redis://, rediss:// (TLS), unix://,
// redis[s]-sentinel:// and redis[s]-cluster:// URLs.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/tls_settings.hpp"
#include "util/errors.hpp"

namespace redlock {

// One sentinel of a redis-sentinel:// URL.
struct SentinelAddress {
    std::string host;
    int port = 26379;
};

struct Endpoint {
    std::string host;  // empty for a unix socket
    int port = 6379;
    std::string socket_path;  // set for unix:// URLs
    std::string user;         // ACL user; empty means the default user
    std::optional<std::string> password;
    // Where the password came from ("the URL", "REDISCLI_AUTH in the environment", ...), which a
    // refused AUTH names: a user who set one source may not know that another (an inherited
    // REDISCLI_AUTH) was used. Empty when no password is set.
    std::string password_source;
    int db = 0;
    // Set for rediss://, rediss-sentinel:// and rediss-cluster:// URLs; the options fill in the
    // files. A sentinel or cluster endpoint hands it to every node and sentinel it connects to.
    std::optional<TlsSettings> tls;
    // redis-cluster:// (cluster_url.hpp): the seed nodes, each with these credentials; host and
    // port above are the first seed's. Empty for a single node.
    std::vector<Endpoint> cluster_seeds;
    // redis-sentinel:// (sentinel.hpp): the master is looked up by name from these sentinels on
    // every (re)connect; host and port above are unused. user/password/db are the master's.
    std::string master_name;
    std::vector<SentinelAddress> sentinels;
    std::string sentinel_user;                     // --sentinel-user (ACL); empty: default
    std::optional<std::string> sentinel_password;  // --sentinel-password-file
    // No URL was given (no -u, no REDLOCK_URL): this is the built-in 127.0.0.1:6379, which a
    // failure to connect says, since the user may not know that a default was used.
    bool is_default = false;

    bool is_unix() const { return !socket_path.empty(); }
    bool is_cluster() const { return !cluster_seeds.empty(); }
    bool is_sentinel() const { return !master_name.empty(); }
    // "127.0.0.1:6379", "[::1]:6380", "unix:/run/redis.sock"; never shows the password.
    std::string describe() const;
};

// redis://[user[:password]@]host[:port][/db], IPv6 as [::1], the same with rediss:// for TLS,
// unix:///path[?db=N], redis[s]-cluster://seed,seed... (cluster_url.hpp) and
// redis[s]-sentinel://sentinel,sentinel.../MASTER (sentinel.hpp).
// Throws UsageError with the reason; the message never repeats a password.
Endpoint parse_redis_url(std::string_view url);

// `url` with its password replaced by ***, for messages.
std::string masked_url(std::string_view url);

// The error for a bad URL of any scheme: "invalid Redis URL '<url>': <why>", the URL masked and
// shortened (a 100 KB URL still gives a short line).
UsageError invalid_url(std::string_view url, std::string_view why);

// What REDLOCK_REDIS holds: where the lock lives, "127.0.0.1:6379/0" or "unix:/run/r.sock/2".
// Two spellings of one server (localhost vs 127.0.0.1, TCP vs socket) do not match; such a
// nested run is then an ordinary contender for the lock and finds it busy (run/reentry.hpp).
std::string redis_identity(const Endpoint& endpoint);

}  // namespace redlock

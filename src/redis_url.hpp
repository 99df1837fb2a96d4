// Where Redis is and how to log in: parsed from redis://, rediss:// (TLS), unix:// URLs.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "tls_settings.hpp"

namespace redlock {

struct Endpoint {
    std::string host;  // empty for a unix socket
    int port = 6379;
    std::string socket_path;  // set for unix:// URLs
    std::string user;         // ACL user; empty means the default user
    std::optional<std::string> password;
    int db = 0;
    std::optional<TlsSettings> tls;  // set for rediss:// URLs; the options fill in the files

    bool is_unix() const { return !socket_path.empty(); }
    // "127.0.0.1:6379", "[::1]:6380", "unix:/run/redis.sock"; never shows the password.
    std::string describe() const;
};

// redis://[user[:password]@]host[:port][/db], IPv6 as [::1], the same with rediss:// for TLS,
// and unix:///path[?db=N].
// Throws UsageError with the reason; the message never repeats a password.
Endpoint parse_redis_url(std::string_view url);

}  // namespace redlock

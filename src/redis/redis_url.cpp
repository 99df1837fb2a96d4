#include "redis/redis_url.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <sys/un.h>

#include <charconv>

#include "redis/cluster_url.hpp"
#include "redis/sentinel.hpp"
#include "util/errors.hpp"
#include "util/excerpt.hpp"

namespace redlock {
namespace {

// The URL with its password replaced, so that error messages can quote it. A URL mistyped
// without "://" ("redis:/u:pw@host") still has its password between the last ':' before the
// '@' and the '@': everything after the scheme up to the '@' is masked then.
std::string masked(std::string_view url) {
    auto at = url.rfind('@');
    if (at == std::string_view::npos) return std::string(url);
    auto scheme_end = url.find("://");
    if (scheme_end == std::string_view::npos || scheme_end > at) {
        auto colon = url.find(':');
        if (colon == std::string_view::npos || colon > at) return std::string(url);
        return fmt::format("{}:***{}", url.substr(0, colon), url.substr(at));
    }
    auto userinfo = url.substr(scheme_end + 3, at - scheme_end - 3);
    auto colon = userinfo.find(':');
    if (colon == std::string_view::npos) return std::string(url);
    return fmt::format("{}{}:***{}", url.substr(0, scheme_end + 3), userinfo.substr(0, colon),
                       url.substr(at));
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Userinfo and paths may carry %XX escapes, e.g. a password with '@' in it.
std::optional<std::string> percent_decode(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
            continue;
        }
        if (i + 2 >= s.size()) return std::nullopt;
        int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
    }
    return out;
}

bool parse_int(std::string_view s, int min, int max, int& out) {
    if (s.empty()) return false;
    int v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size() || v < min || v > max) return false;
    out = v;
    return true;
}

}  // namespace

std::string masked_url(std::string_view url) {
    return masked(url);
}

UsageError invalid_url(std::string_view url, std::string_view why) {
    return UsageError(fmt::format("invalid Redis URL '{}': {}", excerpt(masked(url)), why));
}

std::string Endpoint::describe() const {
    if (is_cluster()) return describe_cluster(*this);
    if (is_sentinel()) return describe_sentinel(*this);
    if (is_unix()) return "unix:" + socket_path;
    if (host.find(':') != std::string::npos) return fmt::format("[{}]:{}", host, port);
    return fmt::format("{}:{}", host, port);
}

Endpoint parse_redis_url(std::string_view url) {
    auto bad = [&](std::string_view why) { return invalid_url(url, why); };
    if (url.starts_with("redis-cluster://") || url.starts_with("rediss-cluster://"))
        return parse_cluster_url(url);
    Endpoint ep;
    if (url.starts_with("unix://")) {
        std::string_view rest = url.substr(7);
        auto q = rest.find('?');
        std::string_view path = rest.substr(0, q);
        if (path.empty() || path[0] != '/') throw bad("expected unix:///absolute/path.sock");
        auto decoded = percent_decode(path);
        if (!decoded) throw bad("bad %-escape in the path");
        ep.socket_path = *decoded;
        if (ep.socket_path.size() >= sizeof(sockaddr_un::sun_path))
            throw bad(fmt::format("the socket path is longer than {} bytes",
                                  sizeof(sockaddr_un::sun_path) - 1));
        ep.host.clear();
        if (q != std::string_view::npos) {
            std::string_view query = rest.substr(q + 1);
            if (!query.starts_with("db=") || !parse_int(query.substr(3), 0, 1 << 20, ep.db))
                throw bad("the only query parameter is db=N");
        }
        return ep;
    }
    if (url.starts_with("redis-sentinel://") || url.starts_with("rediss-sentinel://"))
        return parse_sentinel_url(url);
    if (url.starts_with("rediss://")) ep.tls.emplace();
    if (!ep.tls && !url.starts_with("redis://"))
        throw bad(
            "expected redis://host[:port][/db], rediss://... (TLS), unix:///path, "
            "redis[s]-sentinel://host[:port],.../MASTER or redis[s]-cluster://host[:port],...");
    std::string_view rest = url.substr(ep.tls ? 9 : 8);

    auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    if (slash != std::string_view::npos) {
        std::string_view db = rest.substr(slash + 1);
        if (!db.empty() && !parse_int(db, 0, 1 << 20, ep.db))
            throw bad("the path must be a database number");
    }

    auto at = authority.rfind('@');
    if (at != std::string_view::npos) {
        std::string_view userinfo = authority.substr(0, at);
        authority = authority.substr(at + 1);
        auto colon = userinfo.find(':');
        auto user = percent_decode(userinfo.substr(0, colon));
        if (!user) throw bad("bad %-escape in the user name");
        ep.user = *user;
        if (colon != std::string_view::npos) {
            auto pass = percent_decode(userinfo.substr(colon + 1));
            if (!pass) throw bad("bad %-escape in the password");
            ep.password = *pass;
        }
    }

    std::string_view port;
    if (authority.starts_with('[')) {
        auto close = authority.find(']');
        if (close == std::string_view::npos) throw bad("unclosed '[' in an IPv6 address");
        ep.host = std::string(authority.substr(1, close - 1));
        // Brackets hold an IPv6 literal only; anything else would go to the resolver and come
        // back as an outage (69) instead of the typo it is. A zone ("%eth0") is left to it.
        in6_addr addr{};
        if (ep.host.find('%') == std::string::npos &&
            inet_pton(AF_INET6, ep.host.c_str(), &addr) != 1)
            throw bad("not an IPv6 address inside '[...]'");
        std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after[0] != ':') throw bad("expected ':port' after ']'");
            port = after.substr(1);
            if (port.empty()) throw bad("empty port");
        }
    } else {
        auto colon = authority.rfind(':');
        if (colon != std::string_view::npos) {
            if (authority.find(':') != colon) throw bad("put an IPv6 address in brackets: [::1]");
            port = authority.substr(colon + 1);
            if (port.empty()) throw bad("empty port");
            authority = authority.substr(0, colon);
        }
        ep.host = std::string(authority);
    }
    if (ep.host.empty()) throw bad("missing host");
    // DNS's limit: a longer name is a typo or an attack, never a Redis to connect to.
    if (ep.host.size() > 253) throw bad("the host name is longer than 253 bytes");
    if (!port.empty() && !parse_int(port, 1, 65535, ep.port)) throw bad("port must be 1-65535");
    return ep;
}

std::string redis_identity(const Endpoint& endpoint) {
    return fmt::format("{}/{}", endpoint.describe(), endpoint.db);
}

}  // namespace redlock

#include "redis/redis_url.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <sys/un.h>

#include <algorithm>
#include <cctype>
#include <optional>

#include "redis/cluster_url.hpp"
#include "redis/sentinel.hpp"
#include "util/errors.hpp"
#include "util/excerpt.hpp"
#include "util/number.hpp"

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

// Userinfo, paths, host names and zone ids may carry %XX escapes, e.g. a password with '@' in
// it. Nothing comes back for a malformed escape; `nul` is set for a NUL byte (raw or "%00"): the
// path, the AUTH argument and the host all become C strings somewhere, and a NUL would cut them
// short, so that the server or the resolver would get something else than what was written.
std::optional<std::string> percent_decode(std::string_view s, bool& nul) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '%') {
            out += s[i];
        } else {
            if (i + 2 >= s.size()) return std::nullopt;
            int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
            if (hi < 0 || lo < 0) return std::nullopt;
            out += static_cast<char>(hi * 16 + lo);
            i += 2;
        }
        if (out.back() == '\0') nul = true;
    }
    return out;
}

bool parse_int(std::string_view s, int min, int max, int& out) {
    std::optional<long long> v = parse_integer(s, min, max);
    if (!v) return false;
    out = static_cast<int>(*v);
    return true;
}

// `part` decoded, or the usage error that names the part (`what`) and why.
template <typename Bad>
std::string decoded(std::string_view part, std::string_view what, Bad bad) {
    bool nul = false;
    auto text = percent_decode(part, nul);
    if (!text) throw bad(fmt::format("bad %-escape in the {}", what));
    if (nul) throw bad(fmt::format("a NUL byte (%00) in the {}", what));
    return *text;
}

// RFC 6874's unreserved characters, the only ones a zone id may hold unescaped.
bool zone_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_' ||
           c == '~' || c == '%';
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
    // Only a bug or a file could bring a raw NUL (argv and the environment cannot): quoting the
    // URL would carry it into the message.
    if (url.find('\0') != std::string_view::npos)
        throw UsageError("invalid Redis URL: it contains a NUL byte");
    if (url.starts_with("redis-cluster://") || url.starts_with("rediss-cluster://"))
        return parse_cluster_url(url);
    Endpoint ep;
    if (url.starts_with("unix://")) {
        std::string_view rest = url.substr(7);
        auto q = rest.find('?');
        std::string_view path = rest.substr(0, q);
        if (path.empty() || path[0] != '/') throw bad("expected unix:///absolute/path.sock");
        ep.socket_path = decoded(path, "path", bad);
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
        ep.user = decoded(userinfo.substr(0, colon), "user name", bad);
        if (colon != std::string_view::npos)
            ep.password = decoded(userinfo.substr(colon + 1), "password", bad);
    }

    std::string_view port;
    if (authority.starts_with('[')) {
        auto close = authority.find(']');
        if (close == std::string_view::npos) throw bad("unclosed '[' in an IPv6 address");
        std::string_view literal = authority.substr(1, close - 1);
        // RFC 6874: a zone id follows the address as "%25zone" ('%' escaped, as everywhere in a
        // URL), e.g. [fe80::1%25eth0]; getaddrinfo takes it as "fe80::1%eth0".
        std::string zone;
        if (auto pct = literal.find('%'); pct != std::string_view::npos) {
            std::string_view raw_zone = literal.substr(std::min(pct + 3, literal.size()));
            if (literal.substr(pct, 3) != "%25" || raw_zone.empty() ||
                !std::all_of(raw_zone.begin(), raw_zone.end(), zone_char))
                throw bad(
                    "a '%' inside '[...]' starts a zone id, written '%25' and the zone: "
                    "[fe80::1%25eth0]");
            zone = decoded(raw_zone, "zone id", bad);
            literal = literal.substr(0, pct);
        }
        ep.host = std::string(literal);
        // Brackets hold an IPv6 literal only; anything else would go to the resolver and come
        // back as an outage (69) instead of the typo it is.
        in6_addr addr{};
        if (inet_pton(AF_INET6, ep.host.c_str(), &addr) != 1)
            throw bad("not an IPv6 address inside '[...]'");
        if (!zone.empty()) ep.host += "%" + zone;
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
        // RFC 3986 lets a host name be %-escaped too; a NUL in it would cut it short.
        ep.host = decoded(authority, "host name", bad);
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

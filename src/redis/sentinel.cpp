#include "redis/sentinel.hpp"

#include <fmt/format.h>

#include <climits>
#include <optional>
#include <vector>

#include "redis/connection.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"
#include "util/number.hpp"

namespace redlock {
namespace {

constexpr std::string_view sentinel_scheme = "redis-sentinel://";
constexpr std::string_view tls_sentinel_scheme = "rediss-sentinel://";

// Parses `piece`, a redis:// URL made from part of the sentinel URL, with the redis:// parser, so
// that both accept exactly the same hosts, ports, %-escapes and database numbers. Errors name
// the URL the user gave, not the piece.
Endpoint parse_piece(const std::string& piece, std::string_view url) {
    try {
        return parse_redis_url(piece);
    } catch (const UsageError& e) {
        std::string prefix = invalid_url(piece, "").what();
        std::string_view why = e.what();
        if (why.starts_with(prefix)) why.remove_prefix(prefix.size());
        throw invalid_url(url, why);
    }
}

// Whether "host:port" names a port, "[::1]:26380" included and "[::1]" not.
bool has_port(std::string_view hostport) {
    auto bracket = hostport.rfind(']');
    auto colon = hostport.rfind(':');
    return colon != std::string_view::npos &&
           (bracket == std::string_view::npos || colon > bracket);
}

Endpoint sentinel_endpoint(const Endpoint& endpoint, const SentinelAddress& address) {
    Endpoint sentinel;
    sentinel.host = address.host;
    sentinel.port = address.port;
    sentinel.user = endpoint.sentinel_user;
    sentinel.password = endpoint.sentinel_password;
    // rediss-sentinel://: the sentinels speak TLS as well as the master (Lettuce's reading, and
    // what managed services that offer Sentinel do), with the same CA and client certificate.
    sentinel.tls = endpoint.tls;
    return sentinel;
}

std::string reply_string(const redisReply& r) {
    return r.type == REDIS_REPLY_STRING || r.type == REDIS_REPLY_STATUS ? std::string(r.str, r.len)
                                                                        : std::string();
}

}  // namespace

Endpoint parse_sentinel_url(std::string_view url) {
    auto bad = [&](std::string_view why) { return invalid_url(url, why); };
    const bool tls = url.starts_with(tls_sentinel_scheme);
    std::string_view rest = url.substr(tls ? tls_sentinel_scheme.size() : sentinel_scheme.size());
    // Lettuce's spelling names the master in the fragment: rediss-sentinel://h1,h2[/db]#MASTER.
    // Only a '#' after the user info counts, so that a password may still hold one.
    std::string_view fragment;
    bool has_fragment = false;
    auto at = rest.rfind('@');
    if (auto hash = rest.find('#', at == std::string_view::npos ? 0 : at);
        hash != std::string_view::npos) {
        fragment = rest.substr(hash + 1);
        rest = rest.substr(0, hash);
        has_fragment = true;
    }
    auto slash = rest.find('/');
    if (slash == std::string_view::npos && !has_fragment)
        throw bad(
            "expected redis-sentinel://host[:port][,host[:port]...]/MASTERNAME[/db] or "
            "...[/db]#MASTERNAME");
    std::string_view authority = rest.substr(0, slash);
    std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash + 1);
    std::string_view userinfo;  // with its '@', so the piece below can carry it as it is
    if (auto at = authority.rfind('@'); at != std::string_view::npos) {
        userinfo = authority.substr(0, at + 1);
        authority = authority.substr(at + 1);
    }
    std::string_view name;
    std::string_view db;
    if (has_fragment) {
        name = fragment;
        db = path;
    } else {
        auto path_slash = path.find('/');
        name = path.substr(0, path_slash);
        db = path_slash == std::string_view::npos ? "" : path.substr(path_slash + 1);
    }
    if (name.empty()) throw bad("missing the master name after the sentinels (/MASTERNAME)");

    // The user, password and database are the master's: the piece has a placeholder host.
    Endpoint ep = parse_piece(fmt::format("redis://{}sentinel/{}", userinfo, db), url);
    ep.host.clear();
    ep.master_name = std::string(name);
    if (authority.empty()) throw bad("missing the sentinels' host[:port] list");
    for (std::size_t start = 0;;) {
        auto comma = authority.find(',', start);
        std::string_view hostport = authority.substr(start, comma - start);
        if (hostport.empty()) throw bad("empty sentinel address in the host list");
        Endpoint one = parse_piece(fmt::format("redis://{}", hostport), url);
        ep.sentinels.push_back({one.host, has_port(hostport) ? one.port : 26379});
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    if (tls) ep.tls.emplace();
    return ep;
}

std::string describe_sentinel(const Endpoint& endpoint) {
    std::string list;
    for (const auto& s : endpoint.sentinels) {
        if (!list.empty()) list += ',';
        list += sentinel_endpoint(endpoint, s).describe();
    }
    return fmt::format("master '{}' via {}sentinels {}", endpoint.master_name,
                       endpoint.tls ? "TLS " : "", list);
}

Endpoint resolve_master(const Endpoint& endpoint, const Timeouts& timeouts, Deadline deadline,
                        int cancel_fd) {
    std::vector<std::string> failures;
    const std::size_t count = endpoint.sentinels.size();
    for (std::size_t i = 0; i < count; ++i) {
        Endpoint sentinel = sentinel_endpoint(endpoint, endpoint.sentinels[i]);
        // An equal share of what is left: a sentinel that swallows packets must not use up the
        // time the ones after it need.
        Deadline now = BootClock::now();
        Deadline share = now + (deadline - now) / static_cast<int>(count - i);
        try {
            Connection conn(sentinel, timeouts);
            conn.set_cancel_fd(cancel_fd);
            conn.ensure_connected(share);
            Reply reply =
                conn.command({"SENTINEL", "get-master-addr-by-name", endpoint.master_name}, share);
            const redisReply& r =
                check(reply, fmt::format("asking the sentinel at {} for master '{}'",
                                         sentinel.describe(), endpoint.master_name))
                    .raw();
            if (r.type != REDIS_REPLY_ARRAY || r.elements != 2) {
                failures.push_back(fmt::format("the sentinel at {} does not know master '{}'",
                                               sentinel.describe(), endpoint.master_name));
                continue;
            }
            Endpoint master;
            master.host = reply_string(*r.element[0]);
            // Any int here, so that the range is refused below in words of its own.
            std::optional<long long> port =
                parse_integer(reply_string(*r.element[1]), INT_MIN, INT_MAX);
            if (master.host.empty() || !port) {
                failures.push_back(fmt::format("the sentinel at {} gave a malformed address",
                                               sentinel.describe()));
                continue;
            }
            master.port = static_cast<int>(*port);
            // A port outside 1-65535 would be logged as given and then cut to 16 bits by the
            // socket address: port 99999 connects to 34463.
            if (master.port < 1 || master.port > 65535) {
                failures.push_back(fmt::format("the sentinel at {} gave port {}, not 1-65535",
                                               sentinel.describe(), master.port));
                continue;
            }
            master.user = endpoint.user;
            master.password = endpoint.password;
            master.db = endpoint.db;
            master.tls = endpoint.tls;
            log::verbose("sentinel {} says master '{}' is at {}", sentinel.describe(),
                         endpoint.master_name, master.describe());
            return master;
        } catch (const RedisUnavailable& e) {
            failures.push_back(e.what());
        } catch (const RedisError& e) {  // e.g. "unknown command": not a sentinel at all
            failures.push_back(e.what());
        }
    }
    std::string why;
    for (const auto& f : failures) why += (why.empty() ? "" : "; ") + f;
    throw RedisUnavailable(
        fmt::format("no sentinel could tell where master '{}' is: {}", endpoint.master_name, why));
}

void check_role_is_master(const redisReply& role, const Endpoint& master,
                          const Endpoint& endpoint) {
    std::string said = role.type == REDIS_REPLY_ARRAY && role.elements > 0
                           ? reply_string(*role.element[0])
                           : std::string("(no ROLE reply)");
    if (said == "master") return;
    throw RedisUnavailable(fmt::format(
        "the sentinels named {} as master '{}', but it says it is a {}: a failover is under way "
        "or a sentinel is out of date",
        master.describe(), endpoint.master_name, said));
}

}  // namespace redlock

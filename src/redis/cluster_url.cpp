#include "redis/cluster_url.hpp"

#include <fmt/format.h>

#include "redis/redis_url.hpp"
#include "util/errors.hpp"
#include "util/excerpt.hpp"

namespace redlock {
namespace {

constexpr std::string_view cluster_scheme = "redis-cluster://";
constexpr std::string_view tls_cluster_scheme = "rediss-cluster://";

}  // namespace

Endpoint parse_cluster_url(std::string_view url) {
    auto bad = [&](std::string_view why) { return invalid_url(url, why); };
    const bool tls = url.starts_with(tls_cluster_scheme);
    std::string_view rest = url.substr(tls ? tls_cluster_scheme.size() : cluster_scheme.size());
    auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    if (slash != std::string_view::npos) {
        std::string_view db = rest.substr(slash + 1);
        if (!db.empty() && db != "0")
            throw bad("Redis Cluster has only database 0; drop the /N (or use /0)");
    }
    std::string_view userinfo;
    if (auto at = authority.rfind('@'); at != std::string_view::npos) {
        userinfo = authority.substr(0, at + 1);  // with the '@'
        authority = authority.substr(at + 1);
    }
    if (authority.empty()) throw bad("expected at least one seed node: redis-cluster://host:port");
    try {
        parse_redis_url(fmt::format("redis://{}seed", userinfo));
    } catch (const UsageError& e) {
        // The piece's reason ("bad %-escape in the password", "a NUL byte (%00) in ..."), with
        // the user's URL quoted instead of the piece.
        std::string piece = fmt::format("redis://{}seed", userinfo);
        std::string prefix = invalid_url(piece, "").what();
        std::string_view why = e.what();
        if (!why.starts_with(prefix)) throw bad("bad %-escape in the user name or password");
        throw bad(why.substr(prefix.size()));
    }

    Endpoint cluster;
    std::size_t seed_number = 0;
    for (std::size_t begin = 0; begin <= authority.size();) {
        std::size_t comma = authority.find(',', begin);
        std::string_view hostport = authority.substr(begin, comma - begin);
        ++seed_number;
        if (hostport.empty()) throw bad(fmt::format("seed {} is empty", seed_number));
        // Each seed is an ordinary redis:// endpoint with the shared credentials; reusing that
        // parser keeps IPv6 brackets, ports and %-escapes the same in both schemes.
        Endpoint seed;
        try {
            seed = parse_redis_url(fmt::format("redis://{}{}", userinfo, hostport));
        } catch (const UsageError&) {
            throw bad(
                fmt::format("seed {} ('{}') is not host[:port]", seed_number, excerpt(hostport)));
        }
        cluster.cluster_seeds.push_back(std::move(seed));
        if (comma == std::string_view::npos) break;
        begin = comma + 1;
    }
    const Endpoint& first = cluster.cluster_seeds.front();
    cluster.host = first.host;
    cluster.port = first.port;
    cluster.user = first.user;
    cluster.password = first.password;
    // Managed clusters (ElastiCache, Memorystore, Redis Cloud) speak TLS on every node: the
    // router copies this endpoint, TLS settings included, for each node it reaches.
    if (tls) cluster.tls.emplace();
    return cluster;
}

std::string describe_cluster(const Endpoint& cluster) {
    std::string seeds;
    for (const Endpoint& seed : cluster.cluster_seeds) {
        if (!seeds.empty()) seeds += ',';
        seeds += seed.describe();
    }
    return (cluster.tls ? "rediss-cluster " : "redis-cluster ") + seeds;
}

}  // namespace redlock

// redis-cluster:// URLs: a list of seed nodes that lead to a Redis Cluster. Only the seeds are
// parsed here; which node serves which key is learnt from the cluster itself (cluster.hpp).
#pragma once

#include <string>
#include <string_view>

#include "redis/redis_url.hpp"

namespace redlock {

// redis-cluster://[user[:password]@]host[:port][,host[:port]...][/0]: every seed gets the same
// credentials; rediss-cluster:// is the same over TLS to every node. A database other than 0 is a
// usage error: Redis Cluster has only database 0.
Endpoint parse_cluster_url(std::string_view url);

// "redis-cluster 10.0.0.1:6379,10.0.0.2:6379" ("rediss-cluster ..." over TLS); never shows the
// password.
std::string describe_cluster(const Endpoint& cluster);

}  // namespace redlock

// redis-cluster:// URLs: seeds, shared credentials, and the usage errors (never echoing the
// password).
#include "redis/cluster_url.hpp"

#include <gtest/gtest.h>

#include "util/errors.hpp"

using redlock::Endpoint;
using redlock::parse_redis_url;
using redlock::UsageError;

TEST(ClusterUrl, SeedsWithPortsAndDefaults) {
    Endpoint ep = parse_redis_url("redis-cluster://10.0.0.1:7000,10.0.0.2,[::1]:7002");
    ASSERT_TRUE(ep.is_cluster());
    ASSERT_EQ(ep.cluster_seeds.size(), 3u);
    EXPECT_EQ(ep.cluster_seeds[0].describe(), "10.0.0.1:7000");
    EXPECT_EQ(ep.cluster_seeds[1].describe(), "10.0.0.2:6379");
    EXPECT_EQ(ep.cluster_seeds[2].describe(), "[::1]:7002");
    EXPECT_EQ(ep.db, 0);
    EXPECT_EQ(ep.describe(), "redis-cluster 10.0.0.1:7000,10.0.0.2:6379,[::1]:7002");
    EXPECT_FALSE(parse_redis_url("redis://h").is_cluster());
}

TEST(ClusterUrl, EverySeedGetsTheCredentials) {
    Endpoint ep = parse_redis_url("redis-cluster://bob:p%40ss@a:1,b:2/0");
    EXPECT_EQ(ep.user, "bob");
    ASSERT_TRUE(ep.password);
    EXPECT_EQ(*ep.password, "p@ss");
    for (const Endpoint& seed : ep.cluster_seeds) {
        EXPECT_EQ(seed.user, "bob");
        ASSERT_TRUE(seed.password);
        EXPECT_EQ(*seed.password, "p@ss");
    }
    EXPECT_EQ(ep.describe().find("p@ss"), std::string::npos);
}

TEST(ClusterUrl, UsageErrorsNeverShowThePassword) {
    for (const char* url :
         {"redis-cluster://", "redis-cluster://:pw@", "redis-cluster://:pw@a:1/2",
          "redis-cluster://:pw@a:1,,b:2", "redis-cluster://:pw@a:99999", "redis-cluster://:pw@a:1,",
          "redis-cluster://:pw%zz@a:1", "redis-cluster://:pw@[::1:1"}) {
        try {
            parse_redis_url(url);
            ADD_FAILURE() << url << " was accepted";
        } catch (const UsageError& e) {
            std::string what = e.what();
            EXPECT_EQ(what.find(":pw"), std::string::npos) << what;
            EXPECT_NE(what.find("redis-cluster://"), std::string::npos) << what;
        }
    }
}

TEST(ClusterUrl, OnlyDatabaseZero) {
    EXPECT_NO_THROW(parse_redis_url("redis-cluster://a:1/0"));
    EXPECT_NO_THROW(parse_redis_url("redis-cluster://a:1/"));
    try {
        parse_redis_url("redis-cluster://a:1/3");
        ADD_FAILURE();
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("only database 0"), std::string::npos);
    }
}

TEST(ClusterUrl, RedissClusterSpeaksTlsToEveryNode) {
    EXPECT_FALSE(redlock::parse_redis_url("redis-cluster://a:1").tls);
    Endpoint ep = redlock::parse_redis_url("rediss-cluster://u:pw@a:7000,b:7001");
    ASSERT_TRUE(ep.is_cluster());
    EXPECT_TRUE(ep.tls);
    EXPECT_EQ(ep.cluster_seeds.size(), 2u);
    EXPECT_EQ(ep.user, "u");
    EXPECT_EQ(ep.describe(), "rediss-cluster a:7000,b:7001");
    EXPECT_THROW(redlock::parse_redis_url("rediss-cluster://a:1/2"), UsageError);
}

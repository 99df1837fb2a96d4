// redis-sentinel:// URLs: the sentinel list, the master name and database, whose password is
// whose, and errors that never repeat a password.
#include <gtest/gtest.h>

#include "redis/redis_url.hpp"
#include "util/errors.hpp"

using redlock::Endpoint;
using redlock::parse_redis_url;
using redlock::UsageError;

TEST(SentinelUrl, SentinelsMasterNameAndDefaultPort) {
    Endpoint ep = parse_redis_url("redis-sentinel://s1:26380,s2,[::1]:26381/mymaster");
    ASSERT_TRUE(ep.is_sentinel());
    EXPECT_EQ(ep.master_name, "mymaster");
    ASSERT_EQ(ep.sentinels.size(), 3u);
    EXPECT_EQ(ep.sentinels[0].host, "s1");
    EXPECT_EQ(ep.sentinels[0].port, 26380);
    EXPECT_EQ(ep.sentinels[1].host, "s2");
    EXPECT_EQ(ep.sentinels[1].port, 26379);
    EXPECT_EQ(ep.sentinels[2].host, "::1");
    EXPECT_EQ(ep.sentinels[2].port, 26381);
    EXPECT_EQ(ep.db, 0);
    EXPECT_FALSE(ep.is_unix());
    EXPECT_EQ(ep.describe(), "master 'mymaster' via sentinels s1:26380,s2:26379,[::1]:26381");
}

TEST(SentinelUrl, DatabaseAfterTheMasterName) {
    EXPECT_EQ(parse_redis_url("redis-sentinel://s1/m/4").db, 4);
    EXPECT_EQ(parse_redis_url("redis-sentinel://s1/m/").db, 0);
}

TEST(SentinelUrl, UserAndPasswordAreTheMastersNotTheSentinels) {
    Endpoint ep = parse_redis_url("redis-sentinel://bob:p%40ss@s1,s2/m");
    EXPECT_EQ(ep.user, "bob");
    ASSERT_TRUE(ep.password);
    EXPECT_EQ(*ep.password, "p@ss");
    EXPECT_FALSE(ep.sentinel_password);
    EXPECT_EQ(ep.describe().find("p@ss"), std::string::npos);
}

TEST(SentinelUrl, MalformedUrlsAreUsageErrorsWithoutThePassword) {
    for (const char* url :
         {"redis-sentinel://s1", "redis-sentinel://s1/", "redis-sentinel:///m",
          "redis-sentinel://s1,,s2/m", "redis-sentinel://s1,/m", "redis-sentinel://s1:0/m",
          "redis-sentinel://s1:99999/m", "redis-sentinel://::1/m", "redis-sentinel://s1/m/x",
          "redis-sentinel://u:hunter2@s1:bad/m"}) {
        try {
            parse_redis_url(url);
            ADD_FAILURE() << url << " was accepted";
        } catch (const UsageError& e) {
            std::string what = e.what();
            EXPECT_EQ(what.find("hunter2"), std::string::npos) << what;
            EXPECT_NE(what.find("redis-sentinel://"), std::string::npos) << what;
        }
    }
}

TEST(SentinelUrl, ErrorsSayWhatIsWrong) {
    try {
        parse_redis_url("redis-sentinel://u:hunter2@s1:99999/m");
        FAIL();
    } catch (const UsageError& e) {
        EXPECT_STREQ(e.what(),
                     "invalid Redis URL 'redis-sentinel://u:***@s1:99999/m': port must be 1-65535");
    }
}

TEST(SentinelUrl, RedissSentinelSpeaksTlsToSentinelsAndMaster) {
    Endpoint plain = parse_redis_url("redis-sentinel://s1/m");
    EXPECT_FALSE(plain.tls);
    Endpoint ep = parse_redis_url("rediss-sentinel://bob:pw@s1:26380,s2/m/3");
    ASSERT_TRUE(ep.is_sentinel());
    EXPECT_TRUE(ep.tls);
    EXPECT_EQ(ep.master_name, "m");
    EXPECT_EQ(ep.db, 3);
    EXPECT_EQ(ep.user, "bob");
    ASSERT_EQ(ep.sentinels.size(), 2u);
    EXPECT_EQ(ep.sentinels[0].port, 26380);
    EXPECT_EQ(ep.describe(), "master 'm' via TLS sentinels s1:26380,s2:26379");
}

TEST(SentinelUrl, LettucesFragmentNamesTheMaster) {
    Endpoint ep = parse_redis_url("rediss-sentinel://u:p%23w@s1,s2:26390/5#mymaster");
    EXPECT_EQ(ep.master_name, "mymaster");
    EXPECT_EQ(ep.db, 5);
    ASSERT_TRUE(ep.password);
    EXPECT_EQ(*ep.password, "p#w");
    EXPECT_EQ(ep.sentinels.size(), 2u);
    EXPECT_EQ(parse_redis_url("redis-sentinel://s1#m").master_name, "m");
    EXPECT_EQ(parse_redis_url("redis-sentinel://s1/#m").db, 0);
    EXPECT_THROW(parse_redis_url("redis-sentinel://s1/0#"), UsageError);
    // A '#' inside the password, before the '@', is not the fragment.
    EXPECT_EQ(*parse_redis_url("redis-sentinel://u:a#b@s1/m").password, "a#b");
}

// URL parsing: every accepted form lands in the right Endpoint field, every malformed one is a
// usage error that never repeats the password.
#include "redis/redis_url.hpp"

#include <gtest/gtest.h>

#include "util/errors.hpp"

using redlock::Endpoint;
using redlock::parse_redis_url;
using redlock::UsageError;

TEST(RedisUrl, HostAloneGetsTheDefaultPortAndDatabase) {
    Endpoint ep = parse_redis_url("redis://cache.example");
    EXPECT_EQ(ep.host, "cache.example");
    EXPECT_EQ(ep.port, 6379);
    EXPECT_EQ(ep.db, 0);
    EXPECT_FALSE(ep.password);
    EXPECT_TRUE(ep.user.empty());
    EXPECT_FALSE(ep.is_unix());
    EXPECT_EQ(ep.describe(), "cache.example:6379");
}

TEST(RedisUrl, PortAndDatabase) {
    Endpoint ep = parse_redis_url("redis://127.0.0.1:6380/3");
    EXPECT_EQ(ep.host, "127.0.0.1");
    EXPECT_EQ(ep.port, 6380);
    EXPECT_EQ(ep.db, 3);
    EXPECT_EQ(parse_redis_url("redis://h/").db, 0);
}

TEST(RedisUrl, UserAndPassword) {
    Endpoint ep = parse_redis_url("redis://bob:s3cret@h:7000");
    EXPECT_EQ(ep.user, "bob");
    ASSERT_TRUE(ep.password);
    EXPECT_EQ(*ep.password, "s3cret");
    EXPECT_EQ(ep.host, "h");
    EXPECT_EQ(ep.port, 7000);
    EXPECT_EQ(ep.describe().find("s3cret"), std::string::npos);
}

TEST(RedisUrl, PasswordWithoutUserIsForTheDefaultUser) {
    Endpoint ep = parse_redis_url("redis://:pw@h");
    EXPECT_TRUE(ep.user.empty());
    ASSERT_TRUE(ep.password);
    EXPECT_EQ(*ep.password, "pw");
}

TEST(RedisUrl, PercentEscapesInUserInfo) {
    Endpoint ep = parse_redis_url("redis://b%6Fb:p%40ss%3Aword@h");
    EXPECT_EQ(ep.user, "bob");
    EXPECT_EQ(*ep.password, "p@ss:word");
}

TEST(RedisUrl, AtSignInsidePasswordUsesTheLastAt) {
    Endpoint ep = parse_redis_url("redis://u:a@b@h:1");
    EXPECT_EQ(*ep.password, "a@b");
    EXPECT_EQ(ep.host, "h");
}

TEST(RedisUrl, Ipv6InBrackets) {
    Endpoint ep = parse_redis_url("redis://[::1]:6380/2");
    EXPECT_EQ(ep.host, "::1");
    EXPECT_EQ(ep.port, 6380);
    EXPECT_EQ(ep.db, 2);
    EXPECT_EQ(ep.describe(), "[::1]:6380");
    EXPECT_EQ(parse_redis_url("redis://[fe80::1]").port, 6379);
}

TEST(RedisUrl, UnixSocketWithAndWithoutDatabase) {
    Endpoint ep = parse_redis_url("unix:///run/redis/redis.sock");
    EXPECT_TRUE(ep.is_unix());
    EXPECT_EQ(ep.socket_path, "/run/redis/redis.sock");
    EXPECT_EQ(ep.db, 0);
    EXPECT_EQ(ep.describe(), "unix:/run/redis/redis.sock");
    EXPECT_EQ(parse_redis_url("unix:///tmp/r.sock?db=5").db, 5);
}

TEST(RedisUrl, RejectsMalformedUrls) {
    for (const char* bad : {"redis://host:99999",
                            "redis://host:0",
                            "redis://host:-1",
                            "redis://host:",
                            "redis://host:x",
                            "http://x",
                            "x",
                            "",
                            "redis://",
                            "redis://:6379",
                            "redis://[::1",
                            "redis://[::1]x",
                            "redis://[::1]:",
                            "redis://::1",
                            "redis://h/db",
                            "redis://h/-1",
                            "redis://h/1/2",
                            "unix://relative.sock",
                            "unix://",
                            "unix:///tmp/r.sock?database=1",
                            "unix:///tmp/r.sock?db=x",
                            "redis://u:p%4@h",
                            "redis://u%zz@h",
                            "rediss://"}) {
        EXPECT_THROW(parse_redis_url(bad), UsageError) << bad;
    }
}

TEST(RedisUrl, ErrorQuotesTheUrlWithThePasswordMasked) {
    try {
        parse_redis_url("redis://bob:hunter2@h:99999");
        FAIL();
    } catch (const UsageError& e) {
        std::string what = e.what();
        EXPECT_EQ(what.find("hunter2"), std::string::npos) << what;
        EXPECT_NE(what.find("bob:***@h:99999"), std::string::npos) << what;
        EXPECT_NE(what.find("port"), std::string::npos) << what;
    }
}

TEST(RedisUrl, Ipv6ZoneIdIsWrittenAsPercent25AndDecoded) {
    // RFC 6874: the '%' before the zone id is itself escaped; getaddrinfo wants "addr%zone".
    Endpoint ep = parse_redis_url("redis://[fe80::1%25eth0]:6380");
    EXPECT_EQ(ep.host, "fe80::1%eth0");
    EXPECT_EQ(ep.port, 6380);
    EXPECT_EQ(ep.describe(), "[fe80::1%eth0]:6380");
    EXPECT_EQ(parse_redis_url("redis://[fe80::1%25en%30]").host, "fe80::1%en0");
}

TEST(RedisUrl, APercentInBracketsThatIsNotAZoneIsAUsageError) {
    for (const char* bad : {"redis://[::1%zz]", "redis://[fe80::1%eth0]", "redis://[fe80::1%25]",
                            "redis://[fe80::1%25eth/0]", "redis://[fe80::1%25e%zz]",
                            "redis://[nothost%25eth0]", "redis://[fe80::1%25e%00]"}) {
        try {
            parse_redis_url(bad);
            ADD_FAILURE() << bad;
        } catch (const UsageError& e) {
            std::string what = e.what();
            EXPECT_EQ(what.find('\n'), std::string::npos) << what;
            EXPECT_NE(what.find("invalid Redis URL"), std::string::npos) << what;
        }
    }
}

TEST(RedisUrl, ANulByteAnywhereIsRefusedAndShownEscaped) {
    // A NUL would cut the path, the AUTH argument or the host short as a C string.
    for (const char* bad :
         {"unix:///tmp/x%00y", "redis://u%00ser:pw@h", "redis://u:s3cr%00et@h", "redis://ho%00st",
          "rediss://h%00", "redis://[fe80::1%25a%00]", "redis-cluster://u:s3cr%00et@h1,h2"}) {
        try {
            parse_redis_url(bad);
            ADD_FAILURE() << bad;
        } catch (const UsageError& e) {
            std::string what = e.what();
            EXPECT_NE(what.find("%00"), std::string::npos) << what;
            EXPECT_EQ(what.find('\0'), std::string::npos) << what;
            EXPECT_EQ(what.find("s3cr"), std::string::npos) << what;
        }
    }
    EXPECT_EQ(parse_redis_url("redis://h%2Dx").host, "h-x");
    EXPECT_THROW(parse_redis_url(std::string_view("redis://[::1\0x]", 15)), UsageError);
    EXPECT_THROW(parse_redis_url("redis://[::1%]"), UsageError);
    EXPECT_THROW(parse_redis_url("redis://[::1%2]"), UsageError);
}

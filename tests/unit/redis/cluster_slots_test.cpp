// Redis Cluster parsing: redirections, CLUSTER SLOTS replies and the key a command is routed by;
// and our slot function against values CLUSTER KEYSLOT gave for a lock's keys.
#include "redis/cluster_slots.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <memory>

#include "lock/node/keys.hpp"
#include "util/errors.hpp"

using namespace redlock;

namespace {

struct ReplyFree {
    void operator()(redisReply* r) const { freeReplyObject(r); }
};

// A reply as hiredis decodes it from raw RESP.
std::unique_ptr<redisReply, ReplyFree> decode(const std::string& resp) {
    std::unique_ptr<redisReader, void (*)(redisReader*)> reader(redisReaderCreate(),
                                                                redisReaderFree);
    redisReaderFeed(reader.get(), resp.data(), resp.size());
    void* out = nullptr;
    EXPECT_EQ(redisReaderGetReply(reader.get(), &out), REDIS_OK);
    EXPECT_NE(out, nullptr);
    return std::unique_ptr<redisReply, ReplyFree>(static_cast<redisReply*>(out));
}

}  // namespace

TEST(ClusterKeyslot, LockKeysMatchClusterKeyslot) {
    // From CLUSTER KEYSLOT on Redis 7.0.15, for every key LockKeys builds.
    struct {
        const char* name;
        unsigned slot;
    } cases[] = {{"job", 2906}, {"a}b", 7866},   {"{tag}x", 8338},     {"jobs:{eu}:nightly", 6893},
                 {"}{", 12793}, {"x{}y", 16116}, {"deploy:web", 14006}};
    for (const auto& c : cases) {
        LockKeys k = LockKeys::make(c.name, "");
        for (const std::string& key :
             {k.key, k.fence, k.info, k.wait, k.wake_key("0123456789abcdef0123456789abcdef")})
            EXPECT_EQ(hash_slot(key), c.slot) << key;
    }
    EXPECT_EQ(LockKeys::make("a}b", "").fence, "{redlock-16279}a}b:fence");
}

TEST(ClusterRedirect, ParsesMovedAndAsk) {
    auto moved = parse_redirect("MOVED 3999 127.0.0.1:6381");
    ASSERT_TRUE(moved);
    EXPECT_EQ(moved->kind, Redirect::Kind::moved);
    EXPECT_EQ(moved->slot, 3999u);
    EXPECT_EQ(moved->to, (NodeAddress{"127.0.0.1", 6381}));
    auto ask = parse_redirect("ASK 0 10.0.0.7:7000");
    ASSERT_TRUE(ask);
    EXPECT_EQ(ask->kind, Redirect::Kind::ask);
    EXPECT_EQ(ask->slot, 0u);
    EXPECT_EQ(ask->to.describe(), "10.0.0.7:7000");
}

TEST(ClusterRedirect, IPv6AndUnknownHosts) {
    auto v6 = parse_redirect("MOVED 16383 ::1:7001");
    ASSERT_TRUE(v6);
    EXPECT_EQ(v6->to.host, "::1");
    EXPECT_EQ(v6->to.port, 7001);
    EXPECT_EQ(v6->to.describe(), "[::1]:7001");
    auto bare = parse_redirect("MOVED 12 :7002");  // the node does not know its address
    ASSERT_TRUE(bare);
    EXPECT_EQ(bare->to.host, "");
}

TEST(ClusterRedirect, AnythingElseIsNoRedirect) {
    for (const char* e : {"", "ERR wrong", "TRYAGAIN Multiple keys request", "MOVED", "MOVED x h:1",
                          "MOVED 16384 h:1", "MOVED 1 h", "MOVED 1 h:0", "MOVED 1 h:70000",
                          "ASKING", "moved 1 h:1"})
        EXPECT_FALSE(parse_redirect(e)) << e;
}

TEST(ClusterRouting, ScriptsRouteByTheirFirstKey) {
    EXPECT_EQ(routing_key({"EVALSHA", "abc", "3", "job", "{job}:fence", "{job}:info", "tok"}),
              "job");
    EXPECT_EQ(routing_key({"eval", "return 1", "1", "k"}), "k");
    EXPECT_FALSE(routing_key({"EVAL", "return 1", "0"}));
    EXPECT_FALSE(routing_key({"EVAL", "return 1", "x", "k"}));
}

TEST(ClusterRouting, PlainCommandsRouteByTheirFirstArgument) {
    EXPECT_EQ(routing_key({"GET", "job"}), "job");
    EXPECT_EQ(routing_key({"BLPOP", "{job}:wake:t", "1.000"}), "{job}:wake:t");
    EXPECT_FALSE(routing_key({"SCAN", "0", "MATCH", "*"}));
    EXPECT_FALSE(routing_key({"CLUSTER", "SLOTS"}));
    EXPECT_FALSE(routing_key({"PING"}));
}

TEST(ClusterSlots, ReadsEachRangesMaster) {
    // Two ranges; the second master has a replica and the Redis 7 metadata map is absent.
    auto reply = decode(
        "*2\r\n"
        "*3\r\n:0\r\n:5460\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n"
        "*4\r\n:5461\r\n:16383\r\n*3\r\n$8\r\n10.0.0.2\r\n:7001\r\n$2\r\nid\r\n"
        "*3\r\n$8\r\n10.0.0.3\r\n:7002\r\n$2\r\nid\r\n");
    auto ranges = parse_cluster_slots(*reply, "seed.example");
    ASSERT_EQ(ranges.size(), 2u);
    EXPECT_EQ(ranges[0].first, 0u);
    EXPECT_EQ(ranges[0].last, 5460u);
    EXPECT_EQ(ranges[0].master, (NodeAddress{"127.0.0.1", 7000}));
    EXPECT_EQ(ranges[1].first, 5461u);
    EXPECT_EQ(ranges[1].last, 16383u);
    EXPECT_EQ(ranges[1].master, (NodeAddress{"10.0.0.2", 7001}));
}

TEST(ClusterSlots, AnUnknownAddressMeansTheHostAsked) {
    auto empty = decode("*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$0\r\n\r\n:7000\r\n$2\r\nid\r\n");
    EXPECT_EQ(parse_cluster_slots(*empty, "10.1.1.1")[0].master, (NodeAddress{"10.1.1.1", 7000}));
    auto question = decode("*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$1\r\n?\r\n:7000\r\n$2\r\nid\r\n");
    EXPECT_EQ(parse_cluster_slots(*question, "h")[0].master.host, "h");
    auto nil = decode("*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$-1\r\n:7000\r\n$2\r\nid\r\n");
    EXPECT_EQ(parse_cluster_slots(*nil, "h")[0].master.host, "h");
}

TEST(ClusterSlots, MalformedRepliesAreErrors) {
    for (const char* resp :
         {"+OK\r\n", "*1\r\n:1\r\n", "*1\r\n*3\r\n:5\r\n:1\r\n*2\r\n$1\r\nh\r\n:1\r\n",
          "*1\r\n*3\r\n:0\r\n:16384\r\n*2\r\n$1\r\nh\r\n:1\r\n",
          "*1\r\n*3\r\n:0\r\n:1\r\n*2\r\n$1\r\nh\r\n:0\r\n",
          "*1\r\n*3\r\n:0\r\n:1\r\n*1\r\n$1\r\nh\r\n"}) {
        auto reply = decode(resp);
        // A protocol error (69), as the reader's own, not an internal one (70).
        try {
            parse_cluster_slots(*reply, "h");
            ADD_FAILURE() << "accepted: " << resp;
        } catch (const RedisUnavailable& e) {
            EXPECT_EQ(e.code(), exit_code::unavailable) << resp;
        } catch (const std::exception& e) {
            ADD_FAILURE() << "not a protocol error: " << e.what() << " for " << resp;
        }
    }
}

TEST(ClusterSlots, MoreRangesThanSlotsAreRefusedQuickly) {
    // 70,000 one-slot masters once truncated the router's 16-bit master index (a slot went to
    // the wrong node) and took seconds to learn; no real cluster has more than 16384 ranges.
    auto entries = [](std::size_t n) {
        std::string resp = fmt::format("*{}\r\n", n);
        for (std::size_t i = 0; i < n; ++i)
            resp += fmt::format("*3\r\n:{0}\r\n:{0}\r\n*2\r\n$8\r\n10.0.0.{1}\r\n:{2}\r\n",
                                i % cluster_slots, i % 10, 1000 + i % 60000);
        return resp;
    };
    EXPECT_EQ(parse_cluster_slots(*decode(entries(cluster_slots)), "h").size(), cluster_slots);
    try {
        parse_cluster_slots(*decode(entries(70000)), "h");
        FAIL() << "70000 ranges accepted";
    } catch (const RedisUnavailable& e) {
        EXPECT_NE(std::string(e.what()).find("70000 slot ranges"), std::string::npos) << e.what();
    }
}

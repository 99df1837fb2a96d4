// The decoder of waiters.lua's reply (status's "waiting:" block): the shape a real server sends,
// then hostile values, each either refused or taken as unknown, never trusted out of range.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <string>

#include "lock/node/waiters.hpp"
#include "util/errors.hpp"

namespace redlock {
namespace {

Reply parse_reply(const std::string& resp) {
    redisReader* reader = redisReaderCreate();
    redisReaderFeed(reader, resp.data(), resp.size());
    void* out = nullptr;
    EXPECT_EQ(redisReaderGetReply(reader, &out), REDIS_OK);
    redisReaderFree(reader);
    return Reply(static_cast<redisReply*>(out));
}

std::string bulk(const std::string& s) {
    return fmt::format("${}\r\n{}\r\n", s.size(), s);
}

// {now_ms, total, mark, who, ...} as RESP.
std::string reply_of(const std::string& now, long long total,
                     const std::vector<std::pair<std::string, std::string>>& waiters) {
    std::string out = fmt::format("*{}\r\n{}:{}\r\n", 2 + 2 * waiters.size(), bulk(now), total);
    for (const auto& [mark, who] : waiters)
        out += fmt::format("{}{}", bulk(mark), who == "nil" ? std::string("$-1\r\n") : bulk(who));
    return out;
}

TEST(Waiters, DecodesTheQueueInOrder) {
    Waiters w =
        waiters_from_reply(parse_reply(reply_of("1700000060000", 3,
                                                {{"1", "1700000000000 4120 web-2"},
                                                 {"shared", "1700000030000 99 host with spaces"},
                                                 {"1", "nil"}})),
                           "job");
    EXPECT_EQ(w.redis_now_ms, 1700000060000);
    EXPECT_EQ(w.total, 3u);
    ASSERT_EQ(w.waiting.size(), 3u);
    EXPECT_EQ(w.waiting[0].host, "web-2");
    EXPECT_EQ(w.waiting[0].pid, 4120);
    EXPECT_EQ(w.waiting[0].since_ms, 1700000000000);
    EXPECT_FALSE(w.waiting[0].shared);
    EXPECT_EQ(w.waiting[1].host, "host with spaces");
    EXPECT_TRUE(w.waiting[1].shared);
    // A waiter of a version that recorded nothing: in its place, unknown.
    EXPECT_EQ(w.waiting[2].host, "");
    EXPECT_EQ(w.waiting[2].pid, 0);
    EXPECT_EQ(w.waiting[2].since_ms, 0);
}

TEST(Waiters, HostileNumbersInARecordAreTakenAsUnknown) {
    Waiters w = waiters_from_reply(
        parse_reply(reply_of("1700000060000", 5,
                             {{"1", "-5 4120 a"},
                              {"1", "99999999999999999999999 2147483648 b"},
                              {"1", "1700000000000 +12 c"},
                              {"1", "garbage"},
                              {"1", fmt::format("1 2 {}", std::string(1000, 'h'))}})),
        "job");
    ASSERT_EQ(w.waiting.size(), 5u);
    EXPECT_EQ(w.waiting[0].since_ms, 0);
    EXPECT_EQ(w.waiting[0].pid, 4120);
    EXPECT_EQ(w.waiting[1].since_ms, 0);
    EXPECT_EQ(w.waiting[1].pid, 0);  // above INT_MAX
    EXPECT_EQ(w.waiting[2].since_ms, 1700000000000);
    EXPECT_EQ(w.waiting[2].pid, 0);  // "+12" is no decimal the script writes
    EXPECT_EQ(w.waiting[3].host, "");
    EXPECT_EQ(w.waiting[4].host.size(), 255u);  // cut as the script cuts it
}

TEST(Waiters, RepliesOutOfShapeAreRefused) {
    // Clock out of range, negative count, odd length, a mark that is not a string, an integer
    // where the record goes, more entries than the script reads, an error reply.
    for (const std::string& resp :
         {reply_of("-1", 0, {}), reply_of("99999999999999999999", 0, {}), reply_of("1", -1, {}),
          std::string("*3\r\n$1\r\n1\r\n:0\r\n$1\r\n1\r\n"),
          std::string("*4\r\n$1\r\n1\r\n:1\r\n:1\r\n$-1\r\n"),
          std::string("*4\r\n$1\r\n1\r\n:1\r\n$1\r\n1\r\n:7\r\n"), std::string(":1\r\n"),
          std::string("-WRONGTYPE the waiters' queue x holds a string\r\n")}) {
        EXPECT_THROW(waiters_from_reply(parse_reply(resp), "job"), Error) << resp;
    }
    std::vector<std::pair<std::string, std::string>> many(max_waiters_read + 1, {"1", "nil"});
    EXPECT_THROW(waiters_from_reply(parse_reply(reply_of("1", 500, many)), "job"), RedisError);
}

TEST(Waiters, ACountBelowTheListedIsRaisedToIt) {
    Waiters w = waiters_from_reply(parse_reply(reply_of("1", 0, {{"1", "nil"}})), "job");
    EXPECT_EQ(w.total, 1u);
}

}  // namespace
}  // namespace redlock

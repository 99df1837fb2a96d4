// The typed reply (redis/reply.hpp): each checked accessor returns what it was asked for and
// throws UnexpectedReply, with the caller's message, for a reply of another type, a number out of
// range or an array of another size; error replies map to the program's exceptions.
#include "redis/reply.hpp"

#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <climits>
#include <cstdint>
#include <memory>
#include <string>

#include "redis/reply_reader.hpp"
#include "util/errors.hpp"

namespace redlock {
namespace {

Reply parse(const std::string& resp) {
    std::unique_ptr<redisReader, void (*)(redisReader*)> reader(new_reply_reader(),
                                                                redisReaderFree);
    EXPECT_EQ(feed_reader(*reader, resp.data(), resp.size()), REDIS_OK);
    void* out = nullptr;
    EXPECT_EQ(redisReaderGetReply(reader.get(), &out), REDIS_OK);
    EXPECT_NE(out, nullptr) << resp;
    return Reply(static_cast<redisReply*>(out));
}

// The message of the UnexpectedReply that `f` throws, or "" when it throws none.
template <typename F>
std::string unexpected(F&& f) {
    try {
        f();
    } catch (const UnexpectedReply& e) {
        return e.what();
    }
    return "";
}

TEST(Reply, TellsTheTypesApart) {
    EXPECT_TRUE(parse("$3\r\nabc\r\n")->is_string());
    EXPECT_TRUE(parse("*0\r\n")->is_array());
    EXPECT_TRUE(parse(":1\r\n")->is_integer());
    EXPECT_TRUE(parse("$-1\r\n")->is_nil());
    EXPECT_TRUE(parse("+OK\r\n")->is_status());
    EXPECT_TRUE(parse("-ERR no\r\n")->is_error());
    EXPECT_EQ(parse("$-1\r\n")->type_name(), "nil");
    EXPECT_EQ(parse(":7\r\n")->type_name(), "an integer");
    EXPECT_EQ(parse("-ERR no\r\n")->error_text(), "ERR no");
    EXPECT_EQ(parse("+OK\r\n")->error_text(), "");
    EXPECT_EQ(parse("+OK\r\n")->text(), "OK");
    EXPECT_EQ(parse(":7\r\n")->text(), "");
}

TEST(Reply, AsIntTakesAnIntegerInRangeOnly) {
    EXPECT_EQ(parse(":5\r\n")->as_int(0, 10, "m"), 5);
    EXPECT_EQ(parse(":-9223372036854775808\r\n")->as_int(LLONG_MIN, LLONG_MAX, "m"), LLONG_MIN);
    EXPECT_EQ(unexpected([] { parse(":11\r\n")->as_int(0, 10, "out of range"); }), "out of range");
    EXPECT_EQ(unexpected([] { parse(":-1\r\n")->as_int(0, 10, "below"); }), "below");
    // A decimal string is no integer reply: as_number takes it, as_int does not.
    EXPECT_EQ(unexpected([] { parse("$1\r\n5\r\n")->as_int(0, 10, "a string"); }), "a string");
    EXPECT_EQ(unexpected([] { parse("$-1\r\n")->as_int(0, 10, "nil"); }), "nil");
    EXPECT_EQ(parse(":5\r\n")->integer(6, 10), std::nullopt);
}

TEST(Reply, AsNumberTakesAnIntegerOrADecimalStringInRange) {
    EXPECT_EQ(parse(":5\r\n")->as_number(0, 10, "m"), 5);
    EXPECT_EQ(parse("$19\r\n4611686018427387903\r\n")->as_number(0, LLONG_MAX, "m"),
              4611686018427387903LL);
    for (const char* bad :
         {"$2\r\n11\r\n", "$2\r\n+5\r\n", "$2\r\n 5\r\n", "$3\r\n5ab\r\n", "$0\r\n\r\n",
          "$20\r\n99999999999999999999\r\n", "*0\r\n", "$-1\r\n", "+5\r\n"})
        EXPECT_EQ(unexpected([&] { parse(bad)->as_number(0, 10, "bad"); }), "bad") << bad;
}

TEST(Reply, AsStringTakesABulkStringOnly) {
    EXPECT_EQ(parse("$3\r\nabc\r\n")->as_string("m"), "abc");
    EXPECT_EQ(parse("$0\r\n\r\n")->as_string("m"), "");
    EXPECT_EQ(unexpected([] { parse("+OK\r\n")->as_string("a status"); }), "a status");
    EXPECT_EQ(unexpected([] { parse("$-1\r\n")->as_string("nil"); }), "nil");
    EXPECT_EQ(unexpected([] { parse(":1\r\n")->as_string("an integer"); }), "an integer");
    EXPECT_EQ(parse("$-1\r\n")->string(), std::nullopt);
}

TEST(Reply, AsArrayBoundsTheElementCount) {
    Reply r = parse("*3\r\n:1\r\n$1\r\nx\r\n$-1\r\n");
    ReplyView a = r->as_array(3, 3, "m");
    EXPECT_EQ(a.size(), 3u);
    EXPECT_EQ(a[0].as_int(1, 1, "m"), 1);
    EXPECT_EQ(a[1].as_string("m"), "x");
    EXPECT_TRUE(a[2].is_nil());
    EXPECT_EQ(unexpected([&] { r->as_array(4, SIZE_MAX, "too few"); }), "too few");
    EXPECT_EQ(unexpected([&] { r->as_array(0, 2, "too many"); }), "too many");
    EXPECT_EQ(unexpected([] { parse(":3\r\n")->as_array(0, SIZE_MAX, "no array"); }), "no array");
    // An element past the end is refused, not read.
    EXPECT_NE(unexpected([&] { (void)a[3]; }), "");
    EXPECT_EQ(parse(":3\r\n")->size(), 0u);
}

TEST(Reply, AMessageToFormatIsMadeOnlyOnFailure) {
    int made = 0;
    auto what = [&] {
        ++made;
        return std::string("formatted");
    };
    EXPECT_EQ(parse(":5\r\n")->as_int(0, 10, what), 5);
    EXPECT_EQ(made, 0);
    EXPECT_EQ(unexpected([&] { parse(":50\r\n")->as_int(0, 10, what); }), "formatted");
    EXPECT_EQ(made, 1);
}

TEST(Reply, AnUnexpectedReplyExitsAsAnyRedisErrorDid) {
    try {
        parse(":1\r\n")->as_string("x");
        FAIL();
    } catch (const RedisError& e) {
        EXPECT_EQ(failure_of(e).code, exit_code::internal);
    }
}

TEST(Reply, CheckMapsErrorRepliesToTheProgramsExceptions) {
    EXPECT_TRUE(check(parse(":1\r\n"), "ctx").is_integer());
    EXPECT_THROW(check(parse("-NOAUTH Authentication required.\r\n"), "ctx"), AuthError);
    EXPECT_THROW(check(parse("-WRONGTYPE Operation\r\n"), "ctx"), DataError);
    EXPECT_THROW(check(parse("-READONLY You can't write\r\n"), "ctx"), RedisUnavailable);
    try {
        check(parse("-ERR something\r\n"), "reading lock 'x'");
        FAIL();
    } catch (const RedisError& e) {
        EXPECT_STREQ(e.what(), "reading lock 'x': ERR something");
    }
}

}  // namespace
}  // namespace redlock

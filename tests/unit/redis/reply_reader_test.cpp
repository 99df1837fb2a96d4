// The bounded reply reader and the reading of script replies: what a hostile server's bytes turn
// into (see also tests/fuzz/reply_fuzz.cpp).
#include "redis/reply_reader.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string_view>

#include "lock/lock_replies.hpp"
#include "util/errors.hpp"

using namespace redlock;

namespace {

struct ReaderDeleter {
    void operator()(redisReader* r) const { redisReaderFree(r); }
};

// The first reply in `bytes`; nullptr and `error` set when the reader refuses them.
Reply read_one(std::string_view bytes, std::string& error) {
    std::unique_ptr<redisReader, ReaderDeleter> reader(new_reply_reader());
    redisReaderFeed(reader.get(), bytes.data(), bytes.size());
    void* out = nullptr;
    if (redisReaderGetReply(reader.get(), &out) != REDIS_OK) {
        error = reader_error(*reader);
        return nullptr;
    }
    return Reply(static_cast<redisReply*>(out));
}

}  // namespace

TEST(ReplyReader, RefusesAnArrayHeaderTooLargeToAllocate) {
    std::string error;
    EXPECT_EQ(read_one("*2000000000\r\n", error), nullptr);
    EXPECT_EQ(error,
              "an array of 2000000000 elements, more than any reply can have here (1048576)");
    EXPECT_EQ(read_one("*1\r\n*1048577\r\n", error), nullptr);
}

TEST(ReplyReader, ReadsOrdinaryReplies) {
    std::string error;
    Reply r = read_one("*2\r\n:1\r\n:42\r\n", error);
    ASSERT_NE(r, nullptr) << error;
    AcquireResult a = acquire_result(r, "job");
    EXPECT_TRUE(a.acquired);
    EXPECT_EQ(a.fence, 42);
}

TEST(ReplyReader, ScriptRepliesOfTheWrongShapeSayWhatCame) {
    std::string error;
    try {
        acquire_result(read_one("*2\r\n$-1\r\n$-1\r\n", error), "job");
        FAIL() << "no RedisError";
    } catch (const RedisError& e) {
        EXPECT_STREQ(e.what(),
                     "unexpected reply from the acquire script: nil where an integer belongs (is "
                     "this Redis?)");
    }
    EXPECT_THROW(renew_result(read_one("+OK\r\n", error), "job"), RedisError);
    EXPECT_THROW(release_result(read_one("*0\r\n", error), "job"), RedisError);
    EXPECT_THROW(lock_state_from_reply(LockKeys::make("job", ""), read_one(":1\r\n", error)),
                 RedisError);
}

// The bounded reply reader and the reading of script replies: what a hostile server's bytes turn
// into (see also tests/fuzz/reply_fuzz.cpp).
// First: hiredis.h includes sds.h without C linkage, which makes its functions unlinkable from
// C++; included here first, its guard keeps hiredis.h from declaring them again.
extern "C" {
#include <hiredis/sds.h>
}
#include "redis/reply_reader.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string_view>

#include "lock/node/ledger_io.hpp"
#include "lock/node/lock_replies.hpp"
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
        return Reply();
    }
    return Reply(static_cast<redisReply*>(out));
}

}  // namespace

TEST(ReplyReader, RefusesAnArrayHeaderTooLargeToAllocate) {
    std::string error;
    EXPECT_FALSE(read_one("*2000000000\r\n", error));
    EXPECT_EQ(error,
              "an array of 2000000000 elements, more than any reply can have here (1048576)");
    EXPECT_FALSE(read_one("*1\r\n*1048577\r\n", error));
}

// Each array under the bound, but the reply as a whole far beyond what any reply here has: 17
// arrays of 65536 integers (1.1 million elements in 4.5 MB on the wire; 16 arrays of a million,
// under the 64 MiB byte cap, took 1.1 GB). Counted across the nested reply, refused as a
// protocol error before it is built whole.
TEST(ReplyReader, RefusesAReplyWithTooManyElementsInAll) {
    std::string inner = "*65536\r\n";
    for (int i = 0; i < 65536; ++i) inner += ":1\r\n";
    std::string bytes = "*17\r\n";
    for (int i = 0; i < 17; ++i) bytes += inner;
    std::string error;
    EXPECT_FALSE(read_one(bytes, error));
    EXPECT_EQ(error,
              "a reply of more than 1048576 elements in all, more than any reply can have "
              "here");
    // The count is per reply: the next reply on the same reader starts again from zero.
    std::unique_ptr<redisReader, ReaderDeleter> reader(new_reply_reader());
    std::string two = "*9\r\n";
    for (int i = 0; i < 9; ++i) two += inner;
    for (int round = 0; round < 3; ++round) {
        redisReaderFeed(reader.get(), two.data(), two.size());
        void* out = nullptr;
        ASSERT_EQ(redisReaderGetReply(reader.get(), &out), REDIS_OK) << reader_error(*reader);
        ASSERT_NE(out, nullptr);
        Reply reply(static_cast<redisReply*>(out));
        EXPECT_EQ(reply->size(), 9u);
    }
}

// A bulk string fed in 16 KiB reads, as Connection::read_reply feeds a server's stream: the
// buffer must grow by doubling (hiredis alone grows it 1 MiB at a time, copying it whole each
// time: 38 reallocations for 32 MiB, and quadratic time towards the 64 MiB cap).
TEST(ReplyReader, ALongReplyGrowsTheBufferByDoubling) {
    std::unique_ptr<redisReader, ReaderDeleter> reader(new_reply_reader());
    const std::size_t size = std::size_t{32} << 20;
    std::string header = "$" + std::to_string(size) + "\r\n";
    ASSERT_EQ(feed_reader(*reader, header.data(), header.size()), REDIS_OK);
    const std::string chunk(16384, 'x');
    int growths = 0;  // reallocations: each may copy the whole buffer
    for (std::size_t fed = 0; fed < size; fed += chunk.size()) {
        std::size_t before = sdsalloc(reader->buf);
        ASSERT_EQ(feed_reader(*reader, chunk.data(), chunk.size()), REDIS_OK);
        growths += sdsalloc(reader->buf) != before;
    }
    ASSERT_EQ(feed_reader(*reader, "\r\n", 2), REDIS_OK);
    EXPECT_LE(growths, 16);
    void* out = nullptr;
    ASSERT_EQ(redisReaderGetReply(reader.get(), &out), REDIS_OK);
    Reply r(static_cast<redisReply*>(out));
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->is_string());
    EXPECT_EQ(r->text().size(), size);
}

TEST(ReplyReader, ReadsOrdinaryReplies) {
    std::string error;
    Reply r = read_one("*2\r\n:1\r\n:42\r\n", error);
    ASSERT_TRUE(r) << error;
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

TEST(ReplyReader, AcquireRepliesCarryTheOncePerSlotRangeChecked) {
    std::string error;
    AcquireResult a = acquire_result(
        read_one("*4\r\n:1\r\n$2\r\n42\r\n$4\r\nslot\r\n$6\r\n498976\r\n", error), "job");
    EXPECT_TRUE(a.acquired);
    EXPECT_EQ(a.fence, 42);
    EXPECT_EQ(a.slot, 498976);
    EXPECT_FALSE(a.holder);
    // permits.lua's tail is not a slot.
    a = acquire_result(read_one("*4\r\n:1\r\n:7\r\n$6\r\npermit\r\n:2\r\n", error), "job");
    EXPECT_FALSE(a.slot);
    // A slot no clock can give, or not a number: the reply is not this protocol's.
    EXPECT_THROW(
        acquire_result(
            read_one("*4\r\n:1\r\n:7\r\n$4\r\nslot\r\n$20\r\n99999999999999999999\r\n", error),
            "job"),
        RedisError);
    EXPECT_THROW(
        acquire_result(read_one("*4\r\n:1\r\n:7\r\n$4\r\nslot\r\n$1\r\nx\r\n", error), "job"),
        RedisError);
}

TEST(ReplyReader, ASkippedSlotNamesTheRunThatDidItAndDropsFieldsOutOfRange) {
    std::string error;
    AcquireResult a = acquire_result(
        read_one("*12\r\n:2\r\n$3\r\n123\r\n$4\r\nhost\r\n$3\r\nweb\r\n$3\r\npid\r\n$2\r\n77\r\n"
                 "$6\r\nend_ms\r\n$13\r\n1700000000000\r\n$4\r\nexit\r\n$3\r\n300\r\n"
                 "$5\r\nfence\r\n$2\r\n-5\r\n",
                 error),
        "job");
    EXPECT_FALSE(a.acquired);
    ASSERT_TRUE(a.slot_done);
    EXPECT_EQ(a.slot, 123);
    EXPECT_EQ(a.slot_done->slot, 123);
    EXPECT_EQ(a.slot_done->host, "web");
    EXPECT_EQ(a.slot_done->pid, 77);
    EXPECT_EQ(a.slot_done->end_ms, 1'700'000'000'000);
    EXPECT_FALSE(a.slot_done->exit_status);  // 300 is no exit status
    EXPECT_EQ(a.slot_done->fence, 0);        // nor -5 a fence
    EXPECT_THROW(acquire_result(read_one("*2\r\n:2\r\n$2\r\nab\r\n", error), "job"), RedisError);
}

TEST(ReplyReader, TheLedgerScriptsReplyIsCheckedElementByElement) {
    std::string error;
    FinishResult f = finish_result(
        read_one("*5\r\n$13\r\n1700000000000\r\n:1\r\n:1\r\n:1\r\n$0\r\n\r\n", error), "job", true);
    EXPECT_EQ(f.release, ReleaseResult::released);
    EXPECT_EQ(f.record.end_ms, 1'700'000'000'000);
    EXPECT_TRUE(f.record.still_held);
    EXPECT_TRUE(f.record.slot_written);
    EXPECT_EQ(f.record.problem, "");
    f = finish_result(read_one("*5\r\n:5\r\n:0\r\n:0\r\n:-1\r\n$9\r\nWRONGTYPE\r\n", error), "job",
                      true);
    EXPECT_EQ(f.release, ReleaseResult::not_owner);
    EXPECT_FALSE(f.record.still_held);
    EXPECT_EQ(f.record.problem, "WRONGTYPE");
    // Record only: 2 says no release was made; a release result would be a lie, and vice versa.
    EXPECT_NO_THROW(
        finish_result(read_one("*5\r\n:5\r\n:0\r\n:0\r\n:2\r\n$0\r\n\r\n", error), "job", false));
    EXPECT_THROW(
        finish_result(read_one("*5\r\n:5\r\n:0\r\n:0\r\n:2\r\n$0\r\n\r\n", error), "job", true),
        RedisError);
    EXPECT_THROW(
        finish_result(read_one("*5\r\n:5\r\n:0\r\n:0\r\n:1\r\n$0\r\n\r\n", error), "job", false),
        RedisError);
    // Flags other than 0 and 1, a time before the epoch, the wrong length.
    EXPECT_THROW(
        finish_result(read_one("*5\r\n:5\r\n:2\r\n:0\r\n:1\r\n$0\r\n\r\n", error), "job", true),
        RedisError);
    EXPECT_THROW(
        finish_result(read_one("*5\r\n:-5\r\n:0\r\n:0\r\n:1\r\n$0\r\n\r\n", error), "job", true),
        RedisError);
    EXPECT_THROW(finish_result(read_one("*3\r\n:5\r\n:0\r\n:0\r\n", error), "job", true),
                 RedisError);
}

TEST(ReplyReader, LastRunsAreTheNewestEntryAndTheNewestSuccessOrNone) {
    std::string error;
    auto bulk = [](const std::string& entry) {
        return "$" + std::to_string(entry.size()) + "\r\n" + entry + "\r\n";
    };
    auto entry = [](const std::string& end_ms, int exit_status) {
        return "end_ms=" + end_ms + "\tstart_ms=1700000000000\toutcome=ran\tduration_ms=5\tpid=9" +
               "\tfence=3\texit=" + std::to_string(exit_status);
    };
    LastRuns r = last_runs_from_reply(
        read_one("*2\r\n" + bulk(entry("1700000000020", 1)) + bulk(entry("1700000000010", 0)),
                 error),
        "job");
    ASSERT_TRUE(r.last && r.last_success) << error;
    EXPECT_EQ(r.last->end_ms, 1'700'000'000'020);
    EXPECT_EQ(r.last->exit_status, 1);
    EXPECT_EQ(r.last_success->end_ms, 1'700'000'000'010);
    // An entry out of range is left out (with a warning), the other one stays.
    r = last_runs_from_reply(read_one("*2\r\n" + bulk(entry("-9223372036854775808", 1)) +
                                          bulk(entry("1700000000010", 0)),
                                      error),
                             "job");
    EXPECT_FALSE(r.last);
    ASSERT_TRUE(r.last_success);
    EXPECT_EQ(r.last_success->end_ms, 1'700'000'000'010);
    // Lua's false comes as nil: none.
    r = last_runs_from_reply(read_one("*2\r\n$-1\r\n$-1\r\n", error), "job");
    EXPECT_FALSE(r.last);
    EXPECT_FALSE(r.last_success);
    EXPECT_THROW(last_runs_from_reply(read_one("*1\r\n$-1\r\n", error), "job"), RedisError);
}

// A run's acquire goes out in its connection's set-up write (AUTH, SELECT), and when that set-up
// fails after Redis ran the acquire anyway, the lock is given back on that same connection before
// the set-up's failure is reported: over fake servers that record what arrives, and over a real
// redis-server (skipped when none is installed), which runs a pipelined command after a failed
// AUTH or SELECT.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "../silent_server.hpp"
#include "lock/node/keys.hpp"
#include "lock/node/lock.hpp"
#include "lock/node/token.hpp"
#include "redis_server.hpp"
#include "util/errors.hpp"
#include "util/fd.hpp"

using namespace redlock;
using std::chrono::milliseconds;

namespace {

using redlock_test::read_until;
using redlock_test::SilentServer;

bool answer(const Fd& conn, const std::string& bytes) {
    return ::write(conn.get(), bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
}

Endpoint loopback(int port) {
    Endpoint ep;
    ep.host = "127.0.0.1";
    ep.port = port;
    return ep;
}

const std::string acquired_reply = "*2\r\n:1\r\n:7\r\n";  // taken, fence 7

}  // namespace

// AUTH, SELECT and the acquire in one write: the fake server answers nothing until the acquire
// has come (or waits out a bound that only a client sending the set-up on its own reaches).
TEST(SetupGiveBack, TheAcquireGoesOutInTheSetUpsWrite) {
    SilentServer server;
    std::string before_answer;
    std::thread redis([&server, &before_answer] {
        Fd conn(::accept4(server.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!conn || !read_until(conn, before_answer, "EVALSHA")) return;
        std::string answers = "+OK\r\n";
        if (before_answer.find("SELECT") != std::string::npos) answers += "+OK\r\n";
        if (before_answer.find("EVALSHA") != std::string::npos) answers += acquired_reply;
        if (!answer(conn, answers)) return;
        std::string rest;
        read_until(conn, rest, "EVALSHA");  // an acquire sent on its own, answered too
        if (rest.find("EVALSHA") != std::string::npos) answer(conn, acquired_reply);
    });
    {
        Endpoint ep = loopback(server.port);
        ep.password = "pw";
        ep.db = 2;
        Connection conn(ep, Timeouts{milliseconds(20000), milliseconds(20000)});
        LockNode node(conn);
        AcquireResult r =
            node.acquire(LockKeys::make("job", "test:"), new_token(), milliseconds(30000));
        EXPECT_TRUE(r.acquired);
        EXPECT_EQ(r.fence, 7);
        conn.close();
    }
    redis.join();
    EXPECT_NE(before_answer.find("AUTH"), std::string::npos) << before_answer;
    EXPECT_NE(before_answer.find("SELECT"), std::string::npos) << before_answer;
    EXPECT_NE(before_answer.find("EVALSHA"), std::string::npos) << before_answer;
}

// A SELECT of a database that does not exist, answered with the acquire that Redis ran in
// database 0 all the same: the run gives the lock back with its token, on the same connection
// (the fake server accepts one), and then reports the SELECT as before.
TEST(SetupGiveBack, ARefusedSelectGivesTheLockBackOnTheSameConnection) {
    SilentServer server;
    std::string token = new_token();
    std::string before_answer;
    std::string after_answer;
    std::thread redis([&] {
        Fd conn(::accept4(server.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!conn || !read_until(conn, before_answer, "EVALSHA")) return;
        std::string answers = "-ERR DB index is out of range\r\n";
        if (before_answer.find("EVALSHA") != std::string::npos) answers += acquired_reply;
        if (!answer(conn, answers)) return;
        if (read_until(conn, after_answer, token)) answer(conn, ":1\r\n");
    });
    Endpoint ep = loopback(server.port);
    ep.db = 99;
    Connection conn(ep, Timeouts{milliseconds(20000), milliseconds(20000)});
    LockNode node(conn);
    try {
        node.acquire(LockKeys::make("job", "test:"), token, milliseconds(30000));
        ADD_FAILURE() << "a refused SELECT was not reported";
    } catch (const UsageError& e) {
        EXPECT_STREQ(e.what(), fmt::format("Redis at 127.0.0.1:{} cannot select database 99: "
                                           "ERR DB index is out of range",
                                           server.port)
                                   .c_str());
    }
    EXPECT_FALSE(conn.connected());
    redis.join();
    EXPECT_NE(before_answer.find("EVALSHA"), std::string::npos) << before_answer;
    EXPECT_NE(after_answer.find("EVAL"), std::string::npos) << after_answer;
    EXPECT_NE(after_answer.find(token), std::string::npos) << after_answer;
}

// Where the acquire was refused because of the set-up (NOAUTH: the password was wrong), it took
// nothing, and nothing is sent after it.
TEST(SetupGiveBack, AnAcquireRefusedForWantOfAuthIsNotGivenBack) {
    SilentServer server;
    std::string before_answer;
    std::string after_answer;
    bool hung_up = false;
    std::thread redis([&] {
        Fd conn(::accept4(server.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!conn || !read_until(conn, before_answer, "EVALSHA")) return;
        if (!answer(conn,
                    "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
                    "-NOAUTH Authentication required.\r\n"))
            return;
        hung_up = !read_until(conn, after_answer, "\n");
    });
    Endpoint ep = loopback(server.port);
    ep.password = "wrong";
    Connection conn(ep, Timeouts{milliseconds(20000), milliseconds(20000)});
    LockNode node(conn);
    EXPECT_THROW(node.acquire(LockKeys::make("job", "test:"), new_token(), milliseconds(30000)),
                 AuthError);
    conn.close();
    redis.join();
    EXPECT_NE(before_answer.find("EVALSHA"), std::string::npos) << before_answer;
    EXPECT_TRUE(hung_up);
    EXPECT_EQ(after_answer, "");
}

namespace {

class SetupGiveBackOnRedis : public unit::RedisServerTest {
  protected:
    // The scripts in the server's cache, so that the pipelined EVALSHA runs (a NOSCRIPT would
    // take nothing, and prove nothing).
    void SetUp() override {
        unit::RedisServerTest::SetUp();
        if (!pid) return;
        LockKeys warm = LockKeys::make("warm", "test:");
        for (auto [permits, shared] : {std::pair{1, false}, std::pair{3, false}, {1, true}}) {
            LockNode node(conn, permits, shared);
            std::string token = new_token();
            ASSERT_TRUE(node.acquire(warm, token, milliseconds(30000)).acquired);
            node.abandon(warm, token);
        }
        raw("FLUSHALL");
    }

    LockKeys keys = LockKeys::make("job", "test:");
};

}  // namespace

// Redis runs the pipelined acquire after "AUTH ... called without any password configured" (an
// inherited REDISCLI_AUTH): the run reports the refusal as before and leaves no key.
TEST_F(SetupGiveBackOnRedis, APasswordTheServerDoesNotNeedLeavesNoLock) {
    Endpoint ep = endpoint();
    ep.password = "not-needed";
    Connection other(ep, Timeouts{});
    LockNode node(other);
    EXPECT_THROW(node.acquire(keys, new_token(), milliseconds(30000)), AuthError);
    EXPECT_EQ(raw({"EXISTS", keys.key}), "0");
    EXPECT_EQ(raw({"EXISTS", keys.info}), "0");
}

// A database that does not exist: Redis runs the acquire in database 0.
TEST_F(SetupGiveBackOnRedis, ADatabaseThatDoesNotExistLeavesNoLockInDatabaseZero) {
    Endpoint ep = endpoint();
    ep.db = 999;
    Connection other(ep, Timeouts{});
    LockNode node(other);
    EXPECT_THROW(node.acquire(keys, new_token(), milliseconds(30000)), UsageError);
    EXPECT_EQ(raw({"EXISTS", keys.key}), "0");
    EXPECT_EQ(raw({"EXISTS", keys.info}), "0");
}

// The same for a waiter: the queued place is given back too.
TEST_F(SetupGiveBackOnRedis, AWaiterQueuedBehindAFailedSetUpLeavesTheQueue) {
    LockNode holder(conn);
    ASSERT_TRUE(holder.acquire(keys, new_token(), milliseconds(30000)).acquired);
    Endpoint ep = endpoint();
    ep.db = 999;
    Connection other(ep, Timeouts{});
    LockNode node(other);
    EXPECT_THROW(node.acquire(keys, new_token(), milliseconds(30000), nullptr, Queueing::wait),
                 UsageError);
    EXPECT_EQ(raw({"EXISTS", keys.wait}), "0");
}

// Permits and shared holds are given back by their own protocols.
TEST_F(SetupGiveBackOnRedis, APermitOrASharedHoldBehindAFailedSetUpIsGivenBack) {
    for (auto [permits, shared] : {std::pair{3, false}, std::pair{1, true}}) {
        Endpoint ep = endpoint();
        ep.db = 999;
        Connection other(ep, Timeouts{});
        LockNode node(other, permits, shared);
        std::string token = new_token();
        EXPECT_THROW(node.acquire(keys, token, milliseconds(30000)), UsageError);
        LockNode here(conn, permits, shared);
        EXPECT_FALSE(here.holds(keys, token)) << permits << " " << shared;
        // ... and it was taken: the same acquire in this database takes it.
        EXPECT_TRUE(here.acquire(keys, token, milliseconds(30000)).acquired);
        raw("FLUSHALL");
    }
}

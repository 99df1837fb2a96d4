// The connection's guarantees that need no Redis: deadlines on a server that never answers, the
// cancel descriptor, refused connections, and the mapping of error replies to exceptions.
#include "redis/connection.hpp"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <thread>

#include "../silent_server.hpp"
#include "redis/cluster_url.hpp"
#include "redis/socket.hpp"
#include "util/errors.hpp"
#include "util/fd.hpp"

using namespace redlock;
using std::chrono::milliseconds;

namespace {

using redlock_test::SilentServer;

Endpoint loopback(int port) {
    Endpoint ep;
    ep.host = "127.0.0.1";
    ep.port = port;
    return ep;
}

int closed_port() {
    SilentServer s;  // bound, then closed at the end of scope
    return s.port;
}

Reply parse_reply(const std::string& resp) {
    redisReader* reader = redisReaderCreate();
    redisReaderFeed(reader, resp.data(), resp.size());
    void* out = nullptr;
    EXPECT_EQ(redisReaderGetReply(reader, &out), REDIS_OK);
    redisReaderFree(reader);
    return Reply(static_cast<redisReply*>(out));
}

template <typename Exception>
void expect_check_throws(const std::string& error_line) {
    Reply r = parse_reply("-" + error_line + "\r\n");
    EXPECT_THROW(check(r, "doing x"), Exception) << error_line;
}

long long ms_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start)
        .count();
}

}  // namespace

TEST(Connection, RefusedConnectionIsUnavailable) {
    Connection conn(loopback(closed_port()), Timeouts{});
    try {
        conn.command({"PING"});
        FAIL();
    } catch (const RedisUnavailable& e) {
        EXPECT_NE(std::string(e.what()).find("cannot connect"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(conn.connected());
}

// The built-in default endpoint, when nothing answers there, is named as such: the user may not
// know that no URL was configured.
TEST(Connection, ARefusedDefaultEndpointSaysItIsTheDefault) {
    Endpoint given = loopback(closed_port());
    Endpoint defaulted = given;
    defaulted.is_default = true;
    for (const Endpoint& ep : {given, defaulted}) {
        Connection conn(ep, Timeouts{});
        try {
            conn.command({"PING"});
            FAIL();
        } catch (const RedisUnavailable& e) {
            std::string what = e.what();
            EXPECT_EQ(
                what.find("the default, as no -u or REDLOCK_URL was given; set "
                          "REDLOCK_URL=redis://HOST:PORT or pass -u URL") != std::string::npos,
                ep.is_default)
                << what;
        }
    }
}

TEST(Connection, SilentServerTimesOutAtTheCommandDeadline) {
    SilentServer server;
    Connection conn(loopback(server.port), Timeouts{milliseconds(2000), milliseconds(200)});
    auto start = std::chrono::steady_clock::now();
    try {
        conn.command({"PING"});
        FAIL();
    } catch (const RedisUnavailable& e) {
        EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
    }
    long long took = ms_since(start);
    EXPECT_GE(took, 190);
    EXPECT_LT(took, 1500);
    // Kept, so that what is sent next runs after it (ALateReplyIsDroppedAndTheNextCommand...).
    EXPECT_TRUE(conn.connected());
}

// A blocking command's late reply could hold up the connection for its whole block: a timed-out
// one is given up with its connection.
TEST(Connection, ABlockingCommandThatTimesOutClosesItsConnection) {
    SilentServer server;
    Connection conn(loopback(server.port), Timeouts{milliseconds(2000), milliseconds(100)});
    EXPECT_THROW(conn.command({"BLPOP", "k", "5"}), ReplyLost);
    EXPECT_FALSE(conn.connected());
}

TEST(Connection, CancelFdAbortsAWaitAtOnce) {
    SilentServer server;
    Connection conn(loopback(server.port), Timeouts{milliseconds(2000), milliseconds(10'000)});
    Fd cancel(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    conn.set_cancel_fd(cancel.get());
    std::thread canceller([&] {
        std::this_thread::sleep_for(milliseconds(100));
        std::uint64_t one = 1;
        EXPECT_EQ(::write(cancel.get(), &one, sizeof one), 8);
    });
    auto start = std::chrono::steady_clock::now();
    EXPECT_THROW(conn.command({"PING"}), Cancelled);
    canceller.join();
    EXPECT_LT(ms_since(start), 2000);
    EXPECT_FALSE(conn.connected());
}

TEST(Connection, ErrorRepliesMapToTheProgramsErrors) {
    expect_check_throws<AuthError>("NOAUTH Authentication required.");
    expect_check_throws<AuthError>("WRONGPASS invalid username-password pair");
    expect_check_throws<AuthError>("NOPERM this user has no permissions");
    expect_check_throws<DataError>("WRONGTYPE Operation against a key holding the wrong kind");
    expect_check_throws<RedisUnavailable>("READONLY You can't write against a read only replica.");
    expect_check_throws<RedisUnavailable>("LOADING Redis is loading the dataset in memory");
    expect_check_throws<RedisUnavailable>("MASTERDOWN Link with MASTER is down");
    expect_check_throws<RedisUnavailable>("BUSY Redis is busy running a script.");
    expect_check_throws<RedisUnavailable>("ERR max number of clients reached");
    expect_check_throws<RedisUnavailable>(
        "UNBLOCKED force unblock from blocking operation, instance state changed (master -> "
        "replica?)");
    expect_check_throws<RedisError>("ERR unknown command");
}

// A redis:// URL naming one node of a Cluster: the MOVED says what to use instead.
TEST(Connection, AMovedReplyOutsideClusterModeSaysToUseAClusterUrl) {
    Reply moved = parse_reply("-MOVED 15069 127.0.0.1:7002\r\n");
    try {
        check(moved, "acquiring lock 'job'");
        FAIL();
    } catch (const RedisUnavailable& e) {
        EXPECT_EQ(std::string(e.what()),
                  "acquiring lock 'job': MOVED 15069 127.0.0.1:7002 (this Redis is a node of a "
                  "Redis Cluster: use a redis-cluster://HOST:PORT URL)");
    }
}

TEST(Connection, CheckPassesOtherRepliesThroughAndNamesTheContext) {
    Reply ok = parse_reply("+OK\r\n");
    EXPECT_TRUE(check(ok, "x").is_status());
    EXPECT_EQ(error_text(*ok), "");
    Reply err = parse_reply("-ERR boom\r\n");
    EXPECT_EQ(error_text(*err), "ERR boom");
    try {
        check(err, "renewing lock 'a'");
        FAIL();
    } catch (const RedisError& e) {
        EXPECT_EQ(std::string(e.what()), "renewing lock 'a': ERR boom");
    }
}

namespace {

// Accepts one connection on `server`, reads the client's first command when `read_first`, sends
// `bytes`, and keeps the connection until the client closes it.
std::thread answer_once(SilentServer& server, std::string bytes, bool read_first) {
    return std::thread([&server, bytes = std::move(bytes), read_first] {
        Fd conn(::accept4(server.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!conn) return;
        char buf[4096];
        if (read_first && ::read(conn.get(), buf, sizeof buf) <= 0) return;
        if (::write(conn.get(), bytes.data(), bytes.size()) < 0) return;
        while (::read(conn.get(), buf, sizeof buf) > 0) {
        }
    });
}

}  // namespace

// sshd (or a web server) on the port answers with its banner, not RESP: say what answered.
TEST(Connection, AFirstReplyThatIsNotRespAsksWhetherThisIsRedis) {
    SilentServer server;
    std::thread sshd = answer_once(server, "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", false);
    {
        Connection conn(loopback(server.port), Timeouts{milliseconds(5000), milliseconds(5000)});
        try {
            conn.command({"PING"});
            FAIL();
        } catch (const RedisUnavailable& e) {
            EXPECT_NE(std::string(e.what()).find("is this a Redis server? the port answered with "
                                                 "'SSH-2.0-OpenSSH_9.2p1 Debian-2')"),
                      std::string::npos)
                << e.what();
        }
        EXPECT_FALSE(conn.connected());
    }
    sshd.join();
}

// A refused AUTH names where the password came from: an inherited REDISCLI_AUTH is easy to miss.
TEST(Connection, ARefusedPasswordNamesItsSource) {
    SilentServer server;
    std::thread redis = answer_once(
        server, "-WRONGPASS invalid username-password pair or user is disabled.\r\n", true);
    {
        Endpoint ep = loopback(server.port);
        ep.password = "stale";
        ep.password_source = "REDISCLI_AUTH in the environment";
        Connection conn(ep, Timeouts{milliseconds(5000), milliseconds(5000)});
        try {
            conn.command({"PING"});
            FAIL();
        } catch (const AuthError& e) {
            std::string what = e.what();
            EXPECT_NE(what.find("WRONGPASS invalid username-password pair or user is disabled. "
                                "(the password came from REDISCLI_AUTH in the environment)"),
                      std::string::npos)
                << what;
            EXPECT_EQ(what.find("stale"), std::string::npos) << what;
        }
    }
    redis.join();
}

using redlock_test::read_until;

// A command that timed out may still run. What the client sends next (a quorum's give-back of an
// acquire whose answer came too late) must run after it, so it goes on the same connection, never
// a new one that could overtake it; the late reply is dropped, never taken for the next answer.
// The fake server answers the first command only once the second has come, on one connection.
TEST(Connection, ALateReplyIsDroppedAndTheNextCommandGoesOnTheSameConnection) {
    SilentServer server;
    std::string got;
    int connections = 0;
    std::thread redis([&] {
        Fd conn(::accept4(server.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!conn) return;
        ++connections;
        if (!read_until(conn, got, "second")) return;
        if (::write(conn.get(), "$5\r\nfirst\r\n$6\r\nsecond\r\n", 23) < 0) return;
        // A client that opened another connection instead is counted (and never answered).
        pollfd p{server.fd.get(), POLLIN, 0};
        if (::poll(&p, 1, 200) > 0) ++connections;
        char buf[64];
        while (::read(conn.get(), buf, sizeof buf) > 0) {
        }
    });
    {
        Connection conn(loopback(server.port), Timeouts{milliseconds(2000), milliseconds(100)});
        EXPECT_THROW(conn.command({"ECHO", "first"}), ReplyLost);
        try {
            Reply r = conn.command({"ECHO", "second"}, BootClock::now() + milliseconds(5000));
            EXPECT_EQ(r->text(), "second");
        } catch (const std::exception& e) {
            ADD_FAILURE() << e.what();
        }
    }
    redis.join();
    EXPECT_EQ(connections, 1);
    EXPECT_NE(got.find("first"), std::string::npos);
}

// AUTH and SELECT go out in one write, answered together: the set-up costs one round trip, not
// one per command. The fake server answers nothing until it has both (or waits out a bound that
// only a client sending them one by one reaches), then answers the PING that follows.
TEST(Connection, AuthAndSelectGoOutInOneWrite) {
    SilentServer server;
    std::string before_answer;
    std::thread redis([&server, &before_answer] {
        Fd conn(::accept4(server.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!conn) return;
        if (!read_until(conn, before_answer, "SELECT")) return;
        char buf[4096];
        std::string answers = "+OK\r\n+OK\r\n";
        if (before_answer.find("PING") != std::string::npos) answers += "+PONG\r\n";
        if (::write(conn.get(), answers.data(), answers.size()) < 0) return;
        for (;;) {
            ssize_t n = ::read(conn.get(), buf, sizeof buf);
            if (n <= 0) return;
            if (std::string_view(buf, static_cast<std::size_t>(n)).find("PING") !=
                    std::string_view::npos &&
                ::write(conn.get(), "+PONG\r\n", 7) < 0)
                return;
        }
    });
    {
        Endpoint ep = loopback(server.port);
        ep.password = "pw";
        ep.db = 2;
        Connection conn(ep, Timeouts{milliseconds(20000), milliseconds(20000)});
        Reply pong = conn.command({"PING"});
        EXPECT_EQ(pong->text(), "PONG");
    }
    redis.join();
    EXPECT_NE(before_answer.find("AUTH"), std::string::npos) << before_answer;
    EXPECT_NE(before_answer.find("SELECT"), std::string::npos) << before_answer;
}

// Redis Cluster with a password: the slot map's CLUSTER SLOTS goes out in the log-in's write, so
// that the first command of a run costs one set-up round trip, not two. The fake node answers
// nothing until it has AUTH and CLUSTER SLOTS (or waits out a bound that only a client sending
// them one by one reaches), names itself the master of every slot, then answers GET.
TEST(Connection, ClusterSlotsGoesOutWithAuth) {
    SilentServer server;
    std::string before_answer;
    const std::string map =
        "*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:" + std::to_string(server.port) +
        "\r\n";
    std::thread redis([&server, &before_answer, &map] {
        Fd conn(::accept4(server.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!conn) return;
        if (!read_until(conn, before_answer, "SLOTS")) return;
        char buf[4096];
        std::string answers = "+OK\r\n";
        if (before_answer.find("SLOTS") != std::string::npos) answers += map;
        if (::write(conn.get(), answers.data(), answers.size()) < 0) return;
        for (;;) {
            ssize_t n = ::read(conn.get(), buf, sizeof buf);
            if (n <= 0) return;
            std::string_view got(buf, static_cast<std::size_t>(n));
            std::string reply = got.find("SLOTS") != std::string_view::npos ? map
                                : got.find("GET") != std::string_view::npos ? "$-1\r\n"
                                                                            : "";
            if (!reply.empty() && ::write(conn.get(), reply.data(), reply.size()) < 0) return;
        }
    });
    {
        Endpoint ep =
            parse_cluster_url("redis-cluster://:pw@127.0.0.1:" + std::to_string(server.port));
        Connection conn(ep, Timeouts{milliseconds(20000), milliseconds(20000)});
        Reply nil = conn.command({"GET", "k"});
        EXPECT_TRUE(nil->is_nil());
    }
    redis.join();
    EXPECT_NE(before_answer.find("AUTH"), std::string::npos) << before_answer;
    EXPECT_NE(before_answer.find("SLOTS"), std::string::npos) << before_answer;
}

// A connection cut after scripts ran may come back to a server that restarted: its cache is
// taken as emptied, so every script goes with its body until it runs again (issue 35). One cut
// before any script ran says nothing about the cache.
TEST(Connection, ACutAfterAScriptRanTakesEveryScriptAsMissing) {
    Connection conn(loopback(closed_port()), Timeouts{});
    conn.close();
    EXPECT_FALSE(conn.script_uncached("acquire"));
    conn.set_script_uncached("acquire", false);  // ran
    EXPECT_FALSE(conn.script_uncached("acquire"));
    EXPECT_FALSE(conn.script_uncached("release"));
    conn.close();
    EXPECT_TRUE(conn.script_uncached("acquire"));
    EXPECT_TRUE(conn.script_uncached("release"));
    conn.set_script_uncached("release", false);  // ran on the new connection
    EXPECT_FALSE(conn.script_uncached("release"));
    EXPECT_TRUE(conn.script_uncached("acquire"));
    // Cut again after release ran there: both missing again.
    conn.close();
    EXPECT_TRUE(conn.script_uncached("acquire"));
    EXPECT_TRUE(conn.script_uncached("release"));
}

// The split-phase form (Connection::send, a quorum's rounds): the set-up and the command go out
// in one write without waiting, and receive() hands the reply over once it is whole. The fake
// server answers nothing until it has AUTH, SELECT and the PING.
TEST(Connection, SendInStepsPutsTheSetUpAndTheCommandInOneWrite) {
    SilentServer server;
    std::string before_answer;
    std::thread redis([&server, &before_answer] {
        Fd conn(::accept4(server.fd.get(), nullptr, nullptr, SOCK_CLOEXEC));
        if (!conn) return;
        if (!read_until(conn, before_answer, "PING")) return;
        if (::write(conn.get(), "+OK\r\n+OK\r\n+PONG\r\n", 17) < 0) return;
        char buf[64];
        while (::read(conn.get(), buf, sizeof buf) > 0) {
        }
    });
    {
        Endpoint ep = loopback(server.port);
        ep.password = "pw";
        ep.db = 2;
        Connection conn(ep, Timeouts{milliseconds(20000), milliseconds(20000)});
        ASSERT_TRUE(conn.sends_in_steps());
        conn.send({"PING"}, BootClock::now() + milliseconds(20000));
        std::optional<Reply> pong;
        while (!(pong = conn.receive())) {
            Connection::Waiting w = conn.waiting();
            pollfd p{w.fd, w.events, 0};
            ASSERT_GE(::poll(&p, 1, 20000), 0);
        }
        EXPECT_EQ((*pong)->text(), "PONG");
        EXPECT_FALSE(conn.in_flight());
        EXPECT_TRUE(conn.connected());
    }
    redis.join();
    EXPECT_NE(before_answer.find("AUTH"), std::string::npos) << before_answer;
    EXPECT_NE(before_answer.find("SELECT"), std::string::npos) << before_answer;
}

// receive() never waits: on a server that does not answer it returns at once, until the deadline
// has passed; then the timeout is a ReplyLost, and the connection is kept for the late reply, as
// command() keeps it (SilentServerTimesOutAtTheCommandDeadline).
TEST(Connection, SendInStepsNeverWaitsAndTimesOutAtTheDeadline) {
    SilentServer server;
    Connection conn(loopback(server.port), Timeouts{milliseconds(2000), milliseconds(200)});
    const Deadline deadline = BootClock::now() + milliseconds(200);
    conn.send({"PING"}, deadline);
    auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(conn.receive());
    EXPECT_LT(ms_since(start), 150);
    for (;;) {
        Connection::Waiting w = conn.waiting();
        EXPECT_LE(w.until, deadline + milliseconds(100));  // the connect's time is added back
        pollfd p{w.fd, w.events, 0};
        ::poll(&p, 1, millis_until(w.until));
        try {
            if (conn.receive()) {
                ADD_FAILURE() << "a silent server answered";
                return;
            }
        } catch (const ReplyLost& e) {
            EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
            break;
        }
    }
    EXPECT_GE(ms_since(start), 150);
    EXPECT_FALSE(conn.in_flight());
    EXPECT_TRUE(conn.connected());
}

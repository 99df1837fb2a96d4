// The quorum mode on the command line: -u repeated or REDLOCK_URL as a list selects it, two URLs
// are refused, and --node-timeout is validated against the ttl.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cli/cli.hpp"
#include "util/errors.hpp"

using namespace redlock;
using std::chrono::milliseconds;

namespace {

Invocation parse(std::vector<std::string> words) {
    words.insert(words.begin(), "redlock-run");
    return parse_command_line(words);
}

}  // namespace

TEST(QuorumCli, OneUrlStaysSingleNode) {
    Invocation inv = parse({"-u", "redis://h:1", "job", "true"});
    EXPECT_TRUE(inv.run.conn.quorum.empty());
    EXPECT_EQ(inv.run.conn.endpoint.host, "h");
}

TEST(QuorumCli, RepeatedUrlSelectsTheQuorum) {
    Invocation inv =
        parse({"-u", "redis://a:1", "--url", "redis://b:2", "-u", "redis://c:3", "job", "true"});
    ASSERT_EQ(inv.run.conn.quorum.size(), 3u);
    EXPECT_EQ(inv.run.conn.quorum[1].host, "b");
    EXPECT_EQ(inv.run.conn.quorum[2].port, 3);
    EXPECT_EQ(inv.run.conn.endpoint.host, "a");
    EXPECT_EQ(inv.run.conn.node_timeout, milliseconds(50));
}

TEST(QuorumCli, UrlListFromTheEnvironment) {
    ::setenv("REDLOCK_URL", "redis://a:1,redis://b:2,redis://c:3,redis://d:4", 1);
    Invocation inv = parse({"status", "job"});
    ::unsetenv("REDLOCK_URL");
    EXPECT_EQ(inv.inspect.conn.quorum.size(), 4u);
}

TEST(QuorumCli, TwoUrlsAreAUsageError) {
    try {
        parse({"-u", "redis://a:1", "-u", "redis://b:2", "job", "true"});
        ADD_FAILURE() << "two URLs accepted";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("majority of two nodes is both"), std::string::npos);
    }
}

TEST(QuorumCli, NodeTimeoutIsValidated) {
    std::vector<std::string> three{"-u", "redis://a", "-u", "redis://b", "-u", "redis://c"};
    auto with = [&](std::vector<std::string> more) {
        std::vector<std::string> w = three;
        w.insert(w.end(), more.begin(), more.end());
        return parse(w);
    };
    EXPECT_EQ(with({"--node-timeout", "20ms", "job", "true"}).run.conn.node_timeout,
              milliseconds(20));
    EXPECT_THROW(with({"--node-timeout", "0", "job", "true"}), UsageError);
    EXPECT_THROW(with({"-t", "1s", "--node-timeout", "101ms", "job", "true"}), UsageError);
    EXPECT_NO_THROW(with({"-t", "1s", "--node-timeout", "100ms", "job", "true"}));
}

// Only a node timeout nobody gave follows the round trip (QuorumLock::follow): one given on the
// command line or in the environment is kept as it is.
TEST(QuorumCli, NodeTimeoutGivenIsKnown) {
    std::vector<std::string> three{"-u", "redis://a", "-u", "redis://b", "-u", "redis://c"};
    auto with = [&](std::vector<std::string> more) {
        std::vector<std::string> w = three;
        w.insert(w.end(), more.begin(), more.end());
        return parse(w);
    };
    EXPECT_FALSE(with({"job", "true"}).run.conn.node_timeout_given);
    EXPECT_TRUE(with({"--node-timeout", "50ms", "job", "true"}).run.conn.node_timeout_given);
    ::setenv("REDLOCK_NODE_TIMEOUT", "80ms", 1);
    Invocation inv = with({"job", "true"});
    ::unsetenv("REDLOCK_NODE_TIMEOUT");
    EXPECT_TRUE(inv.run.conn.node_timeout_given);
    EXPECT_EQ(inv.run.conn.node_timeout, milliseconds(80));
}

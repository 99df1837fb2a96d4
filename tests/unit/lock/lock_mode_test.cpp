// A node's mode is chosen once, where the node is built, and each mode answers for itself what
// the steps above it used to branch on: which protocol it speaks and which keys hold a token.
// No server: building a node and asking its mode sends nothing.
#include "lock/node/lock_mode.hpp"

#include <gtest/gtest.h>

#include "lock/node/keys.hpp"
#include "lock/node/lock.hpp"
#include "lock/node/permits.hpp"
#include "lock/node/shared.hpp"

using namespace redlock;

namespace {

Endpoint nowhere() {
    Endpoint e;
    e.host = "127.0.0.1";
    e.port = 1;  // never dialled: these tests send nothing
    return e;
}

class Mode : public ::testing::Test {
  protected:
    Connection conn{nowhere(), Timeouts{}};
    LockKeys keys = LockKeys::make("job", "test:");
    std::string token = "0123456789abcdef0123456789abcdef";
};

}  // namespace

TEST_F(Mode, APlainNodeIsNeitherPermitsNorShared) {
    LockNode node(conn);
    EXPECT_EQ(node.permits(), 1);
    EXPECT_FALSE(node.shared());
}

TEST_F(Mode, PermitsAboveOneChooseThePermitsProtocol) {
    LockNode node(conn, 3);
    EXPECT_EQ(node.permits(), 3);
    EXPECT_FALSE(node.shared());
}

TEST_F(Mode, OnePermitIsThePlainLock) {
    LockNode node(conn, 1);
    EXPECT_EQ(node.permits(), 1);
    EXPECT_FALSE(node.shared());
    EXPECT_EQ(node.held_keys(keys, token, 1).key, keys.key);
}

TEST_F(Mode, SharedChoosesTheSharedProtocol) {
    LockNode node(conn, 1, true);
    EXPECT_EQ(node.permits(), 1);
    EXPECT_TRUE(node.shared());
}

// The CLI refuses the pair (shared_permits_refusal); a node given both speaks permits, as the
// flag pairs did by testing permits first.
TEST_F(Mode, PermitsWinOverSharedWhenGivenBoth) {
    LockNode node(conn, 2, true);
    EXPECT_EQ(node.permits(), 2);
    EXPECT_FALSE(node.shared());
}

// What a quorum's fence step compares the token against (RedisQuorumNode::raise_fence).
TEST_F(Mode, APlainTokenIsHeldByTheLockKeyAndItsInfo) {
    HeldKeys held = LockNode(conn).held_keys(keys, token, 1);
    EXPECT_EQ(held.key, keys.key);
    EXPECT_EQ(held.info, keys.info);
}

TEST_F(Mode, APermitIsHeldByItsOwnKeyAndInfo) {
    HeldKeys held = LockNode(conn, 3).held_keys(keys, token, 2);
    EXPECT_EQ(held.key, permit_key_prefix(keys) + "2");
    EXPECT_EQ(held.info, permit_key_prefix(keys) + "2:info");
}

TEST_F(Mode, ASharedHoldIsHeldByTheHoldersRecord) {
    HeldKeys held = LockNode(conn, 1, true).held_keys(keys, token, 1);
    EXPECT_EQ(held.key, shared_record_prefix(keys) + token);
    EXPECT_EQ(held.info, held.key);
}

TEST(QueueArg, SaysWhereAFailedAcquireWaits) {
    EXPECT_EQ(queue_arg(Queueing::none, 0), "");
    EXPECT_EQ(queue_arg(Queueing::none, 7), "");
    EXPECT_EQ(queue_arg(Queueing::wait, 0), "1");
    EXPECT_EQ(queue_arg(Queueing::wait, 7), "ticket:7");
}

TEST(AliveGrace, OutlastsTwoCommandTimeoutsAndASecond) {
    Endpoint e = nowhere();
    Connection conn(e, Timeouts{Millis(500), Millis(3000)});
    EXPECT_EQ(alive_grace(conn), Millis(7000));
}

// The scripts' side of a quorum's hand-off for --permits N and --shared (issue 35), on one node
// against a real redis-server (skipped when none is installed): a quorum waiter (queued at a
// ticket) that asks for it is handed the freed permit or the shared hold, and its acquire that
// confirms a hand-off draws a fresh counter, so that two waiters handed at once never read one
// counter and take one fence (QuorumLock::acquire takes the highest counter + 1).
#include <gtest/gtest.h>

#include <chrono>

#include "lock/node/keys.hpp"
#include "lock/node/lock.hpp"
#include "lock/node/token.hpp"
#include "redis_server.hpp"

using namespace redlock;
using std::chrono::milliseconds;

namespace {

class QuorumScripts : public unit::RedisServerTest {
  protected:
    // The first element of `token`'s wake-up list ("" when empty).
    std::string wake_up(const std::string& token) {
        return raw({"LINDEX", keys.wake_key(token), "0"});
    }

    LockKeys keys = LockKeys::make("job", "");
    const Millis ttl{30'000};
};

}  // namespace

TEST_F(QuorumScripts, QuorumPermitWaitersAreHandedTheFreedPermitsAndConfirmWithFreshCounters) {
    const std::string h1 = new_token(), h2 = new_token(), w1 = new_token(), w2 = new_token();
    LockNode holder1{conn, 2}, holder2{conn, 2}, waiter1{conn, 2}, waiter2{conn, 2};
    ASSERT_TRUE(holder1.acquire(keys, h1, ttl).acquired);
    ASSERT_TRUE(holder2.acquire(keys, h2, ttl).acquired);
    waiter1.set_hand_off(Millis(5'000));
    waiter2.set_hand_off(Millis(5'000));
    ASSERT_FALSE(waiter1.acquire(keys, w1, ttl, nullptr, Queueing::wait, 100).acquired);
    ASSERT_FALSE(waiter2.acquire(keys, w2, ttl, nullptr, Queueing::wait, 200).acquired);
    ASSERT_EQ(holder1.release(keys, h1), ReleaseResult::released);
    ASSERT_EQ(holder2.release(keys, h2), ReleaseResult::released);
    // Each freed permit went to the waiter it admits, the first waiter first.
    EXPECT_TRUE(wake_up(w1).starts_with("handoff:")) << wake_up(w1);
    EXPECT_TRUE(wake_up(w1).ends_with(":1")) << wake_up(w1);
    EXPECT_TRUE(wake_up(w2).ends_with(":2")) << wake_up(w2);
    const long long before = std::stoll(raw({"GET", keys.fence}));
    AcquireResult a = waiter1.acquire(keys, w1, ttl, nullptr, Queueing::wait, 100);
    AcquireResult b = waiter2.acquire(keys, w2, ttl, nullptr, Queueing::wait, 200);
    ASSERT_TRUE(a.acquired);
    ASSERT_TRUE(b.acquired);
    EXPECT_EQ(a.permit, 1);
    EXPECT_EQ(b.permit, 2);
    ASSERT_TRUE(a.counter && b.counter);
    EXPECT_GT(*a.counter, before);
    EXPECT_GT(*b.counter, *a.counter);
}

TEST_F(QuorumScripts, QuorumReadersAreHandedASharedHoldAndConfirmWithFreshCounters) {
    const std::string writer = new_token(), r1 = new_token(), r2 = new_token();
    LockNode exclusive{conn}, reader1{conn, 1, true}, reader2{conn, 1, true};
    ASSERT_TRUE(exclusive.acquire(keys, writer, ttl).acquired);
    reader1.set_hand_off(Millis(5'000));
    reader2.set_hand_off(Millis(5'000));
    ASSERT_FALSE(reader1.acquire(keys, r1, ttl, nullptr, Queueing::wait, 100).acquired);
    ASSERT_FALSE(reader2.acquire(keys, r2, ttl, nullptr, Queueing::wait, 200).acquired);
    ASSERT_EQ(exclusive.release(keys, writer), ReleaseResult::released);
    EXPECT_TRUE(wake_up(r1).starts_with("handoff:")) << wake_up(r1);
    EXPECT_TRUE(wake_up(r2).starts_with("handoff:")) << wake_up(r2);
    const long long before = std::stoll(raw({"GET", keys.fence}));
    AcquireResult a = reader1.acquire(keys, r1, ttl, nullptr, Queueing::wait, 100);
    AcquireResult b = reader2.acquire(keys, r2, ttl, nullptr, Queueing::wait, 200);
    ASSERT_TRUE(a.acquired);
    ASSERT_TRUE(b.acquired);
    ASSERT_TRUE(a.counter && b.counter);
    EXPECT_GT(*a.counter, before);
    EXPECT_GT(*b.counter, *a.counter);
}

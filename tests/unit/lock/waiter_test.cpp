// The waiter (--wait) against a real redis-server: a release hands the lock to the waiter at the
// queue's head, in arrival order; a holder that died is taken over when its key expires; a wait
// that runs out, or a signal, leaves nothing of the waiter behind; the progress callback sees
// the holder and the place in the queue. The e2e suite (wait.bats, quorum_wait.bats) drives the
// same code through the binary; these pin its contract below the backend interface.
#include "lock/waiter.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "../eventually.hpp"
#include "lock/keys.hpp"
#include "lock/token.hpp"
#include "redis_server.hpp"
#include "util/signals.hpp"

using namespace redlock;
using std::chrono::milliseconds;

namespace {

class Waiter : public unit::RedisServerTest {
  protected:
    // The signals stay blocked after SignalEvents is gone (redlock-run never unblocks them); here
    // that would outlive the test, and a later test's command (RunTest's) would start with
    // SIGTERM blocked and sleep through its --max-runtime. Drained first: a signal still
    // pending would kill the test process when unblocked.
    ~Waiter() override {
        while (signals.next()) {
        }
        pthread_sigmask(SIG_SETMASK, &signals.original_mask(), nullptr);
    }

    // Before any thread of the test starts: the waiters' threads inherit the blocked mask.
    SignalEvents signals;
    LockKeys keys = LockKeys::make("job", "test:");

    // A waiter on a connection of its own, in a thread: its result when it is done.
    std::future<WaitResult> wait_in_thread(const std::string& token, Millis wait, Millis ttl,
                                           WaitProgressFn progress = {},
                                           Millis restart_guard = Millis(0)) {
        return std::async(std::launch::async, [=, this] {
            Connection c(endpoint(), Timeouts{});
            LockNode n(c);
            n.set_restart_guard(restart_guard);
            return acquire_waiting(n, keys, token, ttl, nullptr, wait, signals, progress);
        });
    }

    long long queued() { return std::stoll(raw({"LLEN", keys.wait})); }
};

}  // namespace

TEST_F(Waiter, ARunWithoutWaitTriesOnceAndDoesNotQueue) {
    LockNode holder(conn);
    ASSERT_TRUE(holder.acquire(keys, new_token(), milliseconds(10000)).acquired);
    WaitResult r =
        acquire_waiting(holder, keys, new_token(), milliseconds(5000), nullptr, Millis(0), signals);
    EXPECT_FALSE(r.last.acquired);
    EXPECT_GT(r.last.holder_pttl, 0);
    EXPECT_EQ(queued(), 0);
}

TEST_F(Waiter, AReleaseHandsTheLockToTheWaitersInArrivalOrder) {
    LockNode holder(conn);
    std::string h = new_token(), first = new_token(), second = new_token();
    AcquireResult held = holder.acquire(keys, h, milliseconds(30000));
    ASSERT_TRUE(held.acquired);
    auto a = wait_in_thread(first, milliseconds(20000), milliseconds(30000));
    ASSERT_TRUE(eventually([&] { return queued() == 1; }, milliseconds(10000)));
    auto b = wait_in_thread(second, milliseconds(20000), milliseconds(30000));
    ASSERT_TRUE(eventually([&] { return queued() == 2; }, milliseconds(10000)));

    EXPECT_EQ(holder.release(keys, h), ReleaseResult::released);
    WaitResult ra = a.get();
    ASSERT_TRUE(ra.last.acquired);
    EXPECT_GT(ra.last.fence, held.fence);
    EXPECT_EQ(raw({"GET", keys.key}), first);
    // The second stays queued while the first holds the lock.
    EXPECT_EQ(b.wait_for(milliseconds(300)), std::future_status::timeout);

    EXPECT_EQ(holder.release(keys, first), ReleaseResult::released);
    WaitResult rb = b.get();
    ASSERT_TRUE(rb.last.acquired);
    EXPECT_GT(rb.last.fence, ra.last.fence);
    EXPECT_EQ(raw({"GET", keys.key}), second);
    EXPECT_EQ(queued(), 0);
}

TEST_F(Waiter, AHolderThatDiedIsTakenOverWhenItsKeyExpires) {
    LockNode holder(conn);
    // Never released: only its TTL ends it.
    ASSERT_TRUE(holder.acquire(keys, new_token(), milliseconds(400)).acquired);
    std::string token = new_token();
    WaitResult r = wait_in_thread(token, milliseconds(20000), milliseconds(30000)).get();
    ASSERT_TRUE(r.last.acquired);
    EXPECT_FALSE(r.interrupted_by);
    EXPECT_EQ(raw({"GET", keys.key}), token);
}

TEST_F(Waiter, AWaitThatRunsOutLeavesNeitherLockNorQueueEntry) {
    LockNode holder(conn);
    std::string h = new_token(), token = new_token();
    ASSERT_TRUE(holder.acquire(keys, h, milliseconds(30000)).acquired);
    WaitResult r = wait_in_thread(token, milliseconds(300), milliseconds(30000)).get();
    EXPECT_FALSE(r.last.acquired);
    EXPECT_FALSE(r.interrupted_by);
    EXPECT_GT(r.last.holder_pttl, 0);
    EXPECT_EQ(raw({"GET", keys.key}), h);
    EXPECT_EQ(queued(), 0);
    EXPECT_EQ(raw({"EXISTS", keys.wake_key(token)}), "0");
}

TEST_F(Waiter, ASignalEndsTheWaitAndTheQueueEntry) {
    LockNode holder(conn);
    std::string h = new_token();
    ASSERT_TRUE(holder.acquire(keys, h, milliseconds(30000)).acquired);
    auto w = wait_in_thread(new_token(), Millis::max(), milliseconds(30000));
    ASSERT_TRUE(eventually([&] { return queued() == 1; }, milliseconds(10000)));
    // Blocked in every thread, so it waits on the signalfd the waiter watches.
    ::kill(::getpid(), SIGTERM);
    ASSERT_EQ(w.wait_for(milliseconds(10000)), std::future_status::ready);
    WaitResult r = w.get();
    EXPECT_FALSE(r.last.acquired);
    EXPECT_EQ(r.interrupted_by, SIGTERM);
    EXPECT_EQ(queued(), 0);
    // A release now has nobody to wake, and the lock is free for the next run.
    EXPECT_EQ(holder.release(keys, h), ReleaseResult::released);
    EXPECT_EQ(raw({"EXISTS", keys.key}), "0");
}

TEST_F(Waiter, ProgressNamesTheHoldersTimeAndOurPlace) {
    LockNode holder(conn);
    std::string h = new_token();
    // Held for 3.5s, never released: the waiter blocks in slices of a second and reads the
    // holder and its place between two, so at least one report after the first knows the place.
    ASSERT_TRUE(holder.acquire(keys, h, milliseconds(3500)).acquired);
    std::atomic<int> reports{0};
    std::atomic<long long> place{0}, pttl{-1};
    WaitResult r = wait_in_thread(new_token(), milliseconds(20000), milliseconds(30000),
                                  [&](const WaitProgress& p) {
                                      ++reports;
                                      if (p.place > place) place = p.place;
                                      if (p.busy.holder_pttl > 0) pttl = p.busy.holder_pttl;
                                  })
                       .get();
    ASSERT_TRUE(r.last.acquired);
    EXPECT_GE(reports.load(), 2);
    EXPECT_EQ(place.load(), 1);
    EXPECT_GT(pttl.load(), 0);
    EXPECT_LE(pttl.load(), 3500);
}

// The restart guard (issue 38): a waiter held back by it blocks until the guard has passed, and
// every report meanwhile says so. The status read between two slices of the block would see only
// a free lock ("being handed over"), so the waiter does not make it while held back.
TEST_F(Waiter, AWaiterHeldBackByTheRestartGuardReportsItUntilItTakesTheLock) {
    // The server's uptime now, and a guard that holds a new name back about three seconds more
    // (the guard counts from a second less than the uptime shows).
    std::string info = raw({"INFO", "server"});
    auto at = info.find("uptime_in_seconds:");
    ASSERT_NE(at, std::string::npos);
    const long long uptime = std::stoll(info.substr(at + 18));
    std::atomic<int> reports{0}, not_held_back{0};
    WaitResult r = wait_in_thread(
                       new_token(), milliseconds(30000), milliseconds(5000),
                       [&](const WaitProgress& p) {
                           ++reports;
                           if (!p.busy.restart_uptime_s) ++not_held_back;
                       },
                       milliseconds((uptime + 2) * 1000))
                       .get();
    ASSERT_TRUE(r.last.acquired);
    EXPECT_GE(reports.load(), 2);
    EXPECT_EQ(not_held_back.load(), 0);
}

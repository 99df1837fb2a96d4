// What a run that did not get a lock is told when shared holders (--shared) are in the way, or
// when a shared run finds an exclusive one there: against a real redis-server (skipped when none
// is installed), through the backend the run uses.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>

#include "lock/backend.hpp"
#include "lock/node/holder.hpp"
#include "lock/node/keys.hpp"
#include "lock/node/lock_replies.hpp"
#include "lock/node/replicas.hpp"
#include "lock/node/scripts.hpp"
#include "lock/node/token.hpp"
#include "lock/quorum/options.hpp"
#include "lock/wait_progress.hpp"
#include "redis_server.hpp"
#include "util/signals.hpp"

using namespace redlock;
using std::chrono::milliseconds;

namespace {

class SharedBusy : public unit::RedisServerTest {
  protected:
    // As Waiter's: the signals SignalEvents blocks are unblocked again for the tests after us.
    ~SharedBusy() override {
        while (signals.next()) {
        }
        pthread_sigmask(SIG_SETMASK, &signals.original_mask(), nullptr);
    }

    std::unique_ptr<LockBackend> backend(bool shared) {
        ConnectionOptions c;
        c.endpoint = endpoint();
        return make_node_backend(keys, c, ReplicaPolicy{}, 1, shared);
    }

    static HolderInfo host(const std::string& name, long long pid) {
        HolderInfo h;
        h.host = name;
        h.pid = pid;
        h.user = "deploy";
        return h;
    }

    SignalEvents signals;
    LockKeys keys = LockKeys::make("job", "");
};

}  // namespace

TEST_F(SharedBusy, AnExclusiveRunBlockedBySharedHoldersIsToldHowManyAndOneOfThem) {
    LockNode first{conn, 1, true}, second{conn, 1, true};
    HolderInfo web2 = host("web-2", 4120), web3 = host("web-3", 77);
    ASSERT_TRUE(first.acquire(keys, new_token(), milliseconds(30000), &web2).acquired);
    ASSERT_TRUE(second.acquire(keys, new_token(), milliseconds(30000), &web3).acquired);
    Acquisition a =
        backend(false)->acquire(new_token(), milliseconds(5000), nullptr, Millis(0), signals);
    ASSERT_FALSE(a.acquired);
    EXPECT_EQ(a.busy.find("unknown holder"), std::string::npos) << a.busy;
    EXPECT_NE(a.busy.find("lock 'job' is held by 2 shared holders ("), std::string::npos) << a.busy;
    EXPECT_TRUE(a.busy.find("web-2 pid 4120") != std::string::npos ||
                a.busy.find("web-3 pid 77") != std::string::npos)
        << a.busy;
    EXPECT_NE(a.busy.find("and 1 more), expires in "), std::string::npos) << a.busy;

    // The same reading for the wait line and the quorum's message: the acquire result says it.
    LockNode exclusive{conn};
    AcquireResult r = exclusive.acquire(keys, new_token(), milliseconds(5000));
    ASSERT_FALSE(r.acquired);
    EXPECT_NE(describe_holder(r).find("2 shared holders ("), std::string::npos)
        << describe_holder(r);
}

TEST_F(SharedBusy, OneSharedHolderIsSaidInTheSingular) {
    LockNode first{conn, 1, true};
    HolderInfo web2 = host("web-2", 4120);
    ASSERT_TRUE(first.acquire(keys, new_token(), milliseconds(30000), &web2).acquired);
    Acquisition a =
        backend(false)->acquire(new_token(), milliseconds(5000), nullptr, Millis(0), signals);
    ASSERT_FALSE(a.acquired);
    EXPECT_NE(a.busy.find("lock 'job' is held by 1 shared holder (web-2 pid 4120 (user deploy)"),
              std::string::npos)
        << a.busy;
}

// A run that does not wait exits with this message: it must not say it will look again.
TEST_F(SharedBusy, ASharedRunThatDoesNotWaitIsNotToldItLooksAgain) {
    LockNode exclusive{conn};
    ASSERT_TRUE(exclusive.acquire(keys, new_token(), milliseconds(30000)).acquired);
    Acquisition a =
        backend(true)->acquire(new_token(), milliseconds(5000), nullptr, Millis(0), signals);
    ASSERT_FALSE(a.acquired);
    EXPECT_NE(a.busy.find("lock 'job' is held by an exclusive holder"), std::string::npos)
        << a.busy;
    EXPECT_EQ(a.busy.find("looking again"), std::string::npos) << a.busy;
    EXPECT_NE(a.busy.find("expires in "), std::string::npos) << a.busy;
}

// The wait line's reads between attempts (wait_status.lua) say only that shared holders hold
// it; the count and the holder named by the last attempt stay on the line.
TEST(SharedWaitView, AReadWithoutTheCountKeepsTheLastAttemptsCountAndHolder) {
    std::string shown;
    WaitProgressFn fn = [&](const WaitProgress& p) { shown = describe_holder(p.busy); };
    WaitView view(fn, "job", BootClock::now(), Deadline::max());
    AcquireResult attempt;
    attempt.shared = true;
    attempt.shared_holders = 2;
    attempt.holder_pttl = 20'000;
    attempt.holder = HolderInfo{};
    attempt.holder->host = "web-2";
    attempt.holder->pid = 4120;
    view.saw(attempt);
    view.show();
    EXPECT_EQ(shown.substr(0, 40), "2 shared holders (web-2 pid 4120 and 1 m");
    AcquireResult read;
    read.shared = true;
    read.holder_pttl = 19'000;
    view.saw(read, 1);
    view.show();
    EXPECT_EQ(shown.substr(0, 40), "2 shared holders (web-2 pid 4120 and 1 m");
    // An exclusive holder now: nothing of the shared ones is kept.
    AcquireResult exclusive;
    exclusive.holder_pttl = 5'000;
    view.saw(exclusive, 1);
    view.show();
    EXPECT_EQ(shown.substr(0, 20), "an unknown holder, e");
}

// wait_status.lua tells a shared hold from a foreign one.
TEST_F(SharedBusy, TheWaitersReadSaysSharedHoldersHoldIt) {
    LockNode first{conn, 1, true};
    ASSERT_TRUE(first.acquire(keys, new_token(), milliseconds(30000)).acquired);
    WaitStatus s =
        wait_status_result(scripts::wait_status().run(conn, {keys.key, keys.info, keys.wait},
                                                      {new_token()}, conn.timeouts().command),
                           keys.key);
    EXPECT_TRUE(s.busy.shared);
    EXPECT_FALSE(s.busy.holder);
    EXPECT_GT(s.busy.holder_pttl, 0);
}

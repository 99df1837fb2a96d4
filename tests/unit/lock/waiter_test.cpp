// The waiter (--wait), twice. Against a real redis-server (Waiter): a release hands the lock to
// the waiter at the queue's head, in arrival order; a holder that died is taken over when its key
// expires; a wait that runs out, or a signal, leaves nothing of the waiter behind; the progress
// callback sees the holder and the place in the queue. On virtual time over a scripted lock
// (VirtualWaiter): when each attempt and each block happens, to the millisecond: the hand-off, the
// take-over at the holder's TTL, the give-up at --wait, the backoff while Redis is away, a signal,
// and the growing re-check behind a foreign holder. The e2e suite (wait.bats, quorum_wait.bats)
// drives the same code through the binary.
#include "lock/waiter.hpp"

#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "../eventually.hpp"
#include "../fake_clock.hpp"
#include "lock/node/holder.hpp"
#include "lock/node/keys.hpp"
#include "lock/node/permits.hpp"
#include "lock/node/token.hpp"
#include "redis_server.hpp"
#include "util/errors.hpp"
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

    // A waiter (--permits `permits`, or --shared) that asks for hand-offs with claim window
    // `claim`, as wait_in_thread.
    std::future<WaitResult> permits_waiter(const std::string& token, Millis claim, int permits = 2,
                                           bool shared = false) {
        return std::async(std::launch::async, [=, this] {
            Connection c(endpoint(), Timeouts{});
            LockNode n(c, permits, shared);
            n.set_restart_guard(Millis(0));
            n.set_hand_off(claim);
            return acquire_waiting(n, keys, token, milliseconds(30000), nullptr,
                                   milliseconds(20000), signals);
        });
    }
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
    // With its info recorded, as every run's is: a holder without it is an application's, which
    // the waiter looks at again every few hundred ms instead (VirtualWaiter.AForeign...).
    HolderInfo info = this_process_info({});
    ASSERT_TRUE(holder.acquire(keys, h, milliseconds(3500), &info).acquired);
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

// ---- Permits (issue 35): a release hands the freed permit to the head waiter ----

// The waiter starts on the wake-up, with no acquire after it: the permit the release freed, a
// fence above the holders', the permit key set for the claim window until its first renewal.
// (A claim of a minute: the waiter starts on it while half is left, however slow the machine.)
TEST_F(Waiter, APermitReleaseHandsThatPermitToTheHeadWaiter) {
    LockNode a(conn, 2), b(conn, 2);
    std::string ta = new_token(), tb = new_token(), w = new_token();
    AcquireResult ha = a.acquire(keys, ta, milliseconds(30000));
    AcquireResult hb = b.acquire(keys, tb, milliseconds(30000));
    ASSERT_TRUE(ha.acquired && hb.acquired);
    auto waiter = permits_waiter(w, milliseconds(60000));
    ASSERT_TRUE(eventually([&] { return queued() == 1; }, milliseconds(10000)));
    EXPECT_EQ(b.release(keys, tb), ReleaseResult::released);
    WaitResult r = waiter.get();
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(r.last.permit, hb.permit);
    EXPECT_EQ(r.lease, milliseconds(60000));  // the hand-off's claim: no acquire's reply
    EXPECT_GT(r.last.fence, hb.fence);
    EXPECT_GT(r.last.fence, ha.fence);
    std::string permit = permit_key_prefix(keys) + std::to_string(hb.permit);
    EXPECT_EQ(raw({"GET", permit}), w);
    EXPECT_EQ(raw({"GET", permit + ":fence"}), std::to_string(r.last.fence));
    EXPECT_LE(std::stoll(raw({"PTTL", permit})), 60000);
    EXPECT_EQ(queued(), 0);
    EXPECT_EQ(raw({"EXISTS", keys.wake_key(w) + ":take"}), "0");
}

// A wake-up that names a permit out of range is no hand-off: the waiter acquires, and holds
// what the server gave it, never the fence or the permit of the payload.
TEST_F(Waiter, AHandOffNamingAPermitOutOfRangeIsNotTrusted) {
    LockNode a(conn, 2), b(conn, 2);
    std::string ta = new_token(), tb = new_token(), w = new_token();
    ASSERT_TRUE(a.acquire(keys, ta, milliseconds(30000)).acquired);
    AcquireResult hb = b.acquire(keys, tb, milliseconds(30000));
    ASSERT_TRUE(hb.acquired);
    auto waiter = permits_waiter(w, milliseconds(60000));
    ASSERT_TRUE(eventually([&] { return queued() == 1; }, milliseconds(10000)));
    raw({"RPUSH", keys.wake_key(w), "handoff:99:3"});
    // Taken by the waiter (which then looks again, and queues again: both permits are held).
    ASSERT_TRUE(eventually(
        [&] {
            return raw({"EXISTS", keys.wake_key(w)}) == "0";
        },
        milliseconds(10000)));
    EXPECT_EQ(b.release(keys, tb), ReleaseResult::released);
    WaitResult r = waiter.get();
    ASSERT_TRUE(r.last.acquired);
    EXPECT_NE(r.last.fence, 99);
    EXPECT_GT(r.last.fence, hb.fence);
    EXPECT_EQ(r.last.permit, hb.permit);
    EXPECT_EQ(raw({"GET", permit_key_prefix(keys) + std::to_string(hb.permit)}), w);
}

// ---- Shared holders (issue 35): a release that frees the lock hands it to the queue's head ----

// Readers queued behind a writer are handed the shared hold together when it releases, up to
// the next writer (writer preference): that one is handed the lock when the last of them leaves,
// and the reader behind it when it leaves, each fence above the last, none with an acquire after
// its wake-up (a lease of the claim window). (A claim of a minute, as above.)
TEST_F(Waiter, AFreedLockIsHandedToTheReadersAtTheHeadThenToTheWriterBehindThem) {
    LockNode writer(conn), reader(conn, 1, true);
    std::string h = new_token(), r1 = new_token(), r2 = new_token(), w = new_token(),
                r3 = new_token();
    AcquireResult held = writer.acquire(keys, h, milliseconds(30000));
    ASSERT_TRUE(held.acquired);
    const Millis claim(60000);
    auto a = permits_waiter(r1, claim, 1, true);
    ASSERT_TRUE(eventually([&] { return queued() == 1; }, milliseconds(10000)));
    auto b = permits_waiter(r2, claim, 1, true);
    ASSERT_TRUE(eventually([&] { return queued() == 2; }, milliseconds(10000)));
    auto c = permits_waiter(w, claim, 1, false);
    ASSERT_TRUE(eventually([&] { return queued() == 3; }, milliseconds(10000)));
    auto d = permits_waiter(r3, claim, 1, true);
    ASSERT_TRUE(eventually([&] { return queued() == 4; }, milliseconds(10000)));

    EXPECT_EQ(writer.release(keys, h), ReleaseResult::released);
    WaitResult ra = a.get(), rb = b.get();
    ASSERT_TRUE(ra.last.acquired && rb.last.acquired);
    EXPECT_EQ(ra.lease, claim);
    EXPECT_EQ(rb.lease, claim);
    EXPECT_GT(ra.last.fence, held.fence);
    EXPECT_GT(rb.last.fence, ra.last.fence);
    EXPECT_EQ(raw({"GET", keys.key}), "redlock-shared");
    // The writer and the reader behind it wait.
    EXPECT_EQ(c.wait_for(milliseconds(300)), std::future_status::timeout);
    EXPECT_EQ(queued(), 2);

    EXPECT_EQ(reader.release(keys, r1), ReleaseResult::released);
    EXPECT_EQ(c.wait_for(milliseconds(300)), std::future_status::timeout);
    EXPECT_EQ(reader.release(keys, r2), ReleaseResult::released);
    WaitResult rc = c.get();
    ASSERT_TRUE(rc.last.acquired);
    EXPECT_EQ(rc.lease, claim);
    EXPECT_GT(rc.last.fence, rb.last.fence);
    EXPECT_EQ(raw({"GET", keys.key}), w);
    EXPECT_LE(std::stoll(raw({"PTTL", keys.key})), 60000);
    EXPECT_EQ(d.wait_for(milliseconds(300)), std::future_status::timeout);

    EXPECT_EQ(writer.release(keys, w), ReleaseResult::released);
    WaitResult rd = d.get();
    ASSERT_TRUE(rd.last.acquired);
    EXPECT_EQ(rd.lease, claim);
    EXPECT_GT(rd.last.fence, rc.last.fence);
    EXPECT_EQ(queued(), 0);
}

// ---- On virtual time ----

namespace {

using std::chrono::milliseconds;

// A lock as the waiter sees it through WaitTarget, scripted on a virtual clock: held until
// `expires` (Deadline::max(): no TTL), given back at `released` (a redlock-run holder's release
// wakes the queue's head; an application's DEL, `foreign`, wakes nobody), Redis away from
// `outage_from` to `outage_to`, and a SIGTERM sent to the waiting thread at `signal_at`. Every
// call is recorded with its virtual time.
class ScriptedLock final : public WaitTarget {
  public:
    explicit ScriptedLock(fake::Clock& clock) : clock_(clock) {}

    Deadline expires = Deadline::max();
    std::optional<Deadline> released;
    bool foreign = false;
    Deadline outage_from = Deadline::max(), outage_to = Deadline::max();
    std::optional<Deadline> signal_at;
    int permits_n = 1;
    // Once the key is gone, the lock stays reserved for the queue's head (a waiter that was
    // woken, or is presumed alive) until then: busy, with no key and no holder info.
    Deadline reserved_until{};
    int key_looks = 0;  // key_exists() calls
    // A release that hands the lock over (lib/take.lua): the wake-up at `released` carries the
    // lock taken for us for `claim`, with fence `handed`; `paused_for` after the wake-up the
    // waiter's thread resumes (a SIGSTOP between the BLPOP's answer and what the waiter does).
    Millis claim{0};
    long long handed = 0;
    int handed_permit_n = 1;  // the permit a permits lock's hand-off names
    Millis paused_for{0};

    std::vector<Deadline> attempts;                   // when each attempt came in
    std::vector<std::pair<Deadline, Millis>> blocks;  // when each block began, and for how long
    std::vector<Deadline> abandons, releases;

    AcquireAttempt attempt(Queueing queueing, bool& reached) override {
        Deadline now = clock_.now();
        attempts.push_back(now);
        if (away(now)) throw RedisUnavailable("cannot connect to Redis (scripted outage)");
        AcquireAttempt a;
        a.sent = now;
        if (free(now) && now < reserved_until) {
            if (queueing == Queueing::wait) reached = true;
            a.result.holder_pttl = std::chrono::ceil<Millis>(reserved_until - now).count();
            return a;
        }
        if (free(now)) {
            a.result.acquired = true;
            a.result.fence = static_cast<long long>(attempts.size());
            reached = true;
            return a;
        }
        if (queueing == Queueing::wait) reached = true;
        a.result.holder_pttl =
            expires == Deadline::max() ? -1 : std::chrono::ceil<Millis>(expires - now).count();
        if (!foreign) a.result.holder = HolderInfo{};
        return a;
    }
    void follow_master() override {}
    Blocked block(Millis block, int cancel_fd) override {
        Deadline now = clock_.now();
        blocks.emplace_back(now, block);
        if (away(now)) throw RedisUnavailable("connection reset (scripted outage)");
        Deadline until = now + block;
        // Only a redlock-run holder's release pushes our wake-up.
        Deadline wake = (!foreign && released && *released > now) ? *released : Deadline::max();
        for (;;) {
            Deadline next = std::min({until, wake, outage_from > now ? outage_from : until});
            if (signal_at && !signalled_) next = std::min(next, *signal_at);
            pollfd p{cancel_fd, POLLIN, 0};
            if (clock_.poll(&p, 1, next) > 0) return Blocked::cancelled;
            Deadline t = clock_.now();
            if (signal_at && !signalled_ && t >= *signal_at) {
                signalled_ = true;
                // To this thread: the test process has others (gtest's), which do not block it.
                pthread_kill(pthread_self(), SIGTERM);
                continue;
            }
            if (t >= wake) {
                if (claim == Millis(0)) return Blocked::woken;
                if (paused_for > Millis(0)) clock_.advance(paused_for);
                return Blocked::handed;
            }
            if (away(t)) throw RedisUnavailable("connection reset (scripted outage)");
            if (t >= until) return Blocked::timed_out;
        }
    }
    WaitStatus status() override {
        WaitStatus s;
        s.busy.holder_pttl = std::chrono::ceil<Millis>(expires - clock_.now()).count();
        s.place = 1;
        return s;
    }
    bool key_exists() override {
        ++key_looks;
        return !free(clock_.now());
    }
    bool abandon() override {
        abandons.push_back(clock_.now());
        return false;
    }
    void release() override { releases.push_back(clock_.now()); }
    int permits() const override { return permits_n; }
    bool shared() const override { return false; }
    Millis claim_window() const override { return claim; }
    long long handed_fence() const override { return handed; }
    int handed_permit() const override { return handed_permit_n; }

  private:
    bool away(Deadline t) const { return t >= outage_from && t < outage_to; }
    bool free(Deadline t) const { return t >= expires || (released && t >= *released); }

    fake::Clock& clock_;
    bool signalled_ = false;
};

class VirtualWaiter : public ::testing::Test {
  protected:
    ~VirtualWaiter() override {
        while (signals.next()) {
        }
        pthread_sigmask(SIG_SETMASK, &signals.original_mask(), nullptr);
    }

    WaitResult wait_for(Millis wait, const WaitProgressFn& progress = {}) {
        return acquire_waiting(lock, keys, milliseconds(30000), wait, signals, progress, clock);
    }
    Deadline at(long long ms) const { return t0 + milliseconds(ms); }
    // The gaps between attempts, in ms.
    std::vector<long long> gaps() const {
        std::vector<long long> out;
        for (std::size_t i = 1; i < lock.attempts.size(); ++i)
            out.push_back(
                std::chrono::duration_cast<Millis>(lock.attempts[i] - lock.attempts[i - 1])
                    .count());
        return out;
    }

    SignalEvents signals;
    fake::Clock clock;
    Deadline t0 = clock.now();
    ScriptedLock lock{clock};
    LockKeys keys = LockKeys::make("job", "test:");
};

}  // namespace

// Twin of wait.bats "a waiter runs as soon as the holder releases" (kept there: the real queue).
TEST_F(VirtualWaiter, AReleaseHandsTheLockOverAtOnceWithoutPolling) {
    lock.expires = at(30'000);
    lock.released = at(1'234);
    WaitResult r = wait_for(milliseconds(20'000));
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(r.lease_start, at(1'234));
    // One busy attempt, one block, one attempt that took it: nothing in between.
    EXPECT_EQ(lock.attempts.size(), 2u);
    ASSERT_EQ(lock.blocks.size(), 1u);
    EXPECT_EQ(lock.blocks[0].second, milliseconds(20'000));
    EXPECT_TRUE(lock.abandons.empty());
}

// Was wait.bats "a waiter takes over from a SIGKILLed holder within ttl + 1s" (a wall-clock
// bound of 3s on a 2s TTL); the real expiry stays proved by Waiter.AHolderThatDiedIs...
TEST_F(VirtualWaiter, AHolderThatNeverReleasesIsTakenOverOneMillisecondAfterItsTtl) {
    lock.expires = at(2'000);
    WaitResult r = wait_for(Millis::max());
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(r.lease_start, at(2'001));
    EXPECT_EQ(lock.attempts.size(), 2u);
}

// A redlock-run holder wakes us when it releases: no look before its TTL, however long.
TEST_F(VirtualWaiter, BehindARedlockHolderTheWaiterDoesNotPollBeforeTheTtl) {
    lock.expires = at(20'000);
    WaitResult r = wait_for(milliseconds(30'000));
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(r.lease_start, at(20'001));
    EXPECT_EQ(gaps(), (std::vector<long long>{20'001}));
}

// The timing half of wait.bats "a wait that runs out exits with the conflict code and names the
// lock" (the exit code and the message stay there).
TEST_F(VirtualWaiter, AWaitGivesUpAtWaitExactlyAndLeavesTheQueue) {
    lock.expires = at(30'000);
    WaitResult r = wait_for(milliseconds(300));
    EXPECT_FALSE(r.last.acquired);
    EXPECT_FALSE(r.interrupted_by);
    EXPECT_EQ(lock.attempts, (std::vector<Deadline>{at(0), at(300)}));
    EXPECT_EQ(lock.abandons, (std::vector<Deadline>{at(300)}));
}

TEST_F(VirtualWaiter, WithoutWaitOneAttemptAndNothingToAbandon) {
    lock.expires = at(30'000);
    WaitResult r = wait_for(Millis(0));
    EXPECT_FALSE(r.last.acquired);
    EXPECT_EQ(lock.attempts.size(), 1u);
    EXPECT_TRUE(lock.blocks.empty());
    EXPECT_TRUE(lock.abandons.empty());
}

// A block never outlasts a minute, whatever the holder's TTL: the socket deadline stays ours.
TEST_F(VirtualWaiter, ALongHoldIsWaitedForInBlocksOfAMinute) {
    lock.expires = at(150'000);
    WaitResult r = wait_for(Millis::max());
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(r.lease_start, at(150'001));
    EXPECT_EQ(gaps(), (std::vector<long long>{60'000, 60'000, 30'001}));
}

// The timing half of wait.bats "a wait that runs out while Redis is down exits 69 with one line"
// (the exit code and the one line stay there): retried with a growing backoff, given up at
// --wait exactly, never a try after it.
TEST_F(VirtualWaiter, RedisAwayIsRetriedWithBackoffAndGivenUpAtWaitExactly) {
    lock.outage_from = at(0);
    try {
        wait_for(milliseconds(2'000));
        FAIL() << "expected RedisUnavailable";
    } catch (const RedisUnavailable& e) {
        EXPECT_NE(std::string(e.what()).find("gave up waiting for lock 'test:job' after 2s"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_EQ(clock.now(), at(2'000));
    EXPECT_EQ(lock.attempts.back(), at(2'000));
    std::vector<long long> g = gaps();
    ASSERT_GE(g.size(), 3u);
    // Equal jitter of 50ms doubling to 1s: each gap within [step/2, step] of its step, and the
    // last one cut at the give-up.
    long long step = 50;
    for (std::size_t i = 0; i + 1 < g.size(); ++i) {
        EXPECT_GE(g[i], step / 2) << i;
        EXPECT_LE(g[i], step) << i;
        step = std::min(step * 2, 1'000LL);
    }
    EXPECT_LE(g.back(), step);
}

// The decision in transient.bats "a waiter whose connection is killed while blocked keeps
// waiting" (the real CLIENT KILL and the kept queue place stay there): a broken block is paused
// over, the wait goes on, and the release after the outage still hands the lock over.
TEST_F(VirtualWaiter, ABlockBrokenByAnOutageIsRiddenOutAndTheHandOffStillComes) {
    lock.expires = at(30'000);
    lock.released = at(5'000);
    lock.outage_from = at(1'000);
    lock.outage_to = at(1'500);
    WaitResult r = wait_for(milliseconds(20'000));
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(r.lease_start, at(5'000));
    EXPECT_TRUE(lock.abandons.empty());
    // No attempt outside the wait, none hammering the outage.
    EXPECT_LE(lock.attempts.size(), 8u);
}

// The decision in wait.bats "SIGTERM and SIGINT end a wait with 128+N" (the exit codes stay
// there): the signal ends the block at once, the waiter leaves the queue, and never takes the lock.
TEST_F(VirtualWaiter, ASignalEndsTheWaitAtOnceAndTheQueueIsLeft) {
    lock.expires = at(30'000);
    lock.released = at(10'000);
    lock.signal_at = at(2'000);
    WaitResult r = wait_for(Millis::max());
    EXPECT_FALSE(r.last.acquired);
    EXPECT_EQ(r.interrupted_by, SIGTERM);
    EXPECT_EQ(clock.now(), at(2'000));
    EXPECT_EQ(lock.attempts.size(), 1u);
    EXPECT_EQ(lock.abandons, (std::vector<Deadline>{at(2'000)}));
}

// The status line: one report a second while blocked, each slice ending where the block would.
TEST_F(VirtualWaiter, ProgressIsReportedOnceASecondWhileBlocked) {
    lock.expires = at(3'500);
    std::vector<Millis> waited;
    WaitResult r =
        wait_for(milliseconds(20'000), [&](const WaitProgress& p) { waited.push_back(p.waited); });
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(r.lease_start, at(3'501));
    EXPECT_EQ(waited, (std::vector<Millis>{milliseconds(0), milliseconds(1'000),
                                           milliseconds(2'000), milliseconds(3'000)}));
}

// ---- The hand-off in one round trip (issue 35): a release takes the lock for the head ----

// The wake-up carries the lock: the command starts on it, with no acquire after it. The lease
// counts from the busy acquire (which emptied the wake-up list: the release ran after it), for
// the claim window, until the first renewal.
TEST_F(VirtualWaiter, AHandOffReceivedWithinTheBoundStartsWithoutAnotherAttempt) {
    lock.expires = at(30'000);
    lock.released = at(1'234);
    lock.claim = milliseconds(5'000);
    lock.handed = 42;
    WaitResult r = wait_for(milliseconds(20'000));
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(r.last.fence, 42);
    EXPECT_EQ(lock.attempts.size(), 1u);
    EXPECT_EQ(r.lease_start, at(0));
    EXPECT_EQ(r.lease, milliseconds(5'000));
    EXPECT_TRUE(lock.abandons.empty());
}

// Handed over when less than half the claim window (less the drift margin) is left of what the
// waiter can prove: it confirms with an acquire, which finds its token, and its lease is that
// acquire's, for the TTL.
TEST_F(VirtualWaiter, AHandOffReceivedAfterTheBoundIsConfirmedByAnAcquire) {
    lock.expires = at(30'000);
    lock.released = at(2'500);
    lock.claim = milliseconds(5'000);
    lock.handed = 42;
    WaitResult r = wait_for(milliseconds(20'000));
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(lock.attempts.size(), 2u);
    EXPECT_NE(r.last.fence, 42);
    EXPECT_EQ(r.lease_start, at(2'500));
    EXPECT_EQ(r.lease, milliseconds(0));
}

// A waiter paused (SIGSTOP) after the wake-up arrived, past the claim window: someone else may
// hold the lock by now. It never starts on the hand-off; it asks again.
TEST_F(VirtualWaiter, AWaiterPausedPastTheClaimWindowDoesNotStartOnTheHandOff) {
    lock.expires = at(30'000);
    lock.released = at(100);
    lock.claim = milliseconds(5'000);
    lock.handed = 42;
    lock.paused_for = milliseconds(6'000);
    WaitResult r = wait_for(milliseconds(20'000));
    ASSERT_EQ(lock.attempts.size(), 2u);
    EXPECT_EQ(lock.attempts[1], at(6'100));
    EXPECT_NE(r.last.fence, 42);
    EXPECT_EQ(r.lease, milliseconds(0));
}

// A block that timed out showed the wake-up list empty when it was sent: the bound counts from
// the last such block (the watched wait's one-second slices: the one sent at 5s timed out, the
// one sent at 6s got the hand-off, which may have been pushed just before it was sent), not from
// the acquire before them, so that a hand-off after a long wait still starts at once.
TEST_F(VirtualWaiter, ABlockThatTimedOutMovesTheBoundOfTheHandOff) {
    lock.expires = at(30'000);
    lock.released = at(6'500);
    lock.claim = milliseconds(5'000);
    lock.handed = 42;
    WaitResult r = wait_for(milliseconds(20'000), [](const WaitProgress&) {});
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(r.last.fence, 42);
    EXPECT_EQ(lock.attempts.size(), 1u);
    EXPECT_EQ(r.lease_start, at(5'000));
    EXPECT_EQ(r.lease, milliseconds(5'000));
}

// A plain wake-up ('1': a release of an older version, or a waiter that asked for no hand-off)
// is followed by an acquire, as before.
TEST_F(VirtualWaiter, APlainWakeUpIsFollowedByAnAcquire) {
    lock.expires = at(30'000);
    lock.released = at(1'234);
    WaitResult r = wait_for(milliseconds(20'000));
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(lock.attempts.size(), 2u);
    EXPECT_EQ(r.lease_start, at(1'234));
    EXPECT_EQ(r.lease, milliseconds(0));
}

// A permits lock's hand-off names the permit: the run renews, releases and reports that one.
TEST_F(VirtualWaiter, APermitHandedOverIsThePermitTheRunHolds) {
    lock.permits_n = 3;
    lock.expires = at(30'000);
    lock.released = at(1'234);
    lock.claim = milliseconds(5'000);
    lock.handed = 42;
    lock.handed_permit_n = 2;
    WaitResult r = wait_for(milliseconds(20'000));
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(r.last.fence, 42);
    EXPECT_EQ(r.last.permit, 2);
    EXPECT_EQ(lock.attempts.size(), 1u);
    EXPECT_EQ(r.lease, milliseconds(5'000));
}

// ---- The wake-up's payload (parse_hand_off): from the server, so range-checked ----

TEST(ParseHandOff, APlainHandOffCarriesTheFence) {
    std::optional<HandOff> h = parse_hand_off("handoff:1796575255101428", 1);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->fence, 1796575255101428);
    EXPECT_EQ(h->permit, 1);
}

TEST(ParseHandOff, APermitsHandOffCarriesTheFenceAndThePermit) {
    std::optional<HandOff> h = parse_hand_off("handoff:42:3", 3);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->fence, 42);
    EXPECT_EQ(h->permit, 3);
}

// Anything else is a plain wake-up: the waiter confirms with an acquire, trusting nothing in it.
TEST(ParseHandOff, AnythingOutOfShapeOrRangeIsNoHandOff) {
    for (std::string_view bad :
         {"1", "", "handoff:", "handoff:0", "handoff:-5", "handoff:+5", "handoff:42 ",
          "handoff:4611686018427387904",                   // 2^62, the fence limit
          "handoff:99999999999999999999", "handoff:42:1",  // a permit, for a plain lock
          "handoff:0x2a", "HANDOFF:42"}) {
        EXPECT_FALSE(parse_hand_off(bad, 1)) << bad;
    }
    for (std::string_view bad :
         {"handoff:42",  // no permit, for a permits lock
          "handoff:42:0", "handoff:42:4", "handoff:42:-1", "handoff:42:2x", "handoff::2",
          "handoff:0:2", "handoff:42:2:1", "handoff:42:", "handoff:4611686018427387904:2",
          "handoff:42:99999999999999999999"}) {
        EXPECT_FALSE(parse_hand_off(bad, 3)) << bad;
    }
    EXPECT_TRUE(parse_hand_off("handoff:4611686018427387903", 1));
}

// ---- A foreign holder (an application's SET NX PX, released by its own DEL) ----

TEST(ForeignRecheck, GrowsFrom100msTo2sAndStays) {
    std::vector<long long> got;
    for (int i = 0; i < 8; ++i) got.push_back(foreign_recheck_after(i).count());
    EXPECT_EQ(got, (std::vector<long long>{100, 200, 400, 800, 1'600, 2'000, 2'000, 2'000}));
    EXPECT_EQ(foreign_recheck_after(1'000'000).count(), 2'000);
}

// The defect: a DEL wakes nobody, and the waiter slept out the whole foreign TTL (20s here).
TEST_F(VirtualWaiter, AForeignHoldersReleaseIsNoticedAtTheNextRecheck) {
    lock.foreign = true;
    lock.expires = at(20'000);
    lock.released = at(1'000);
    WaitResult r = wait_for(milliseconds(30'000));
    ASSERT_TRUE(r.last.acquired);
    // Looks at 0, 100, 300, 700, 1500ms: the first after the DEL takes it.
    EXPECT_EQ(gaps(), (std::vector<long long>{100, 200, 400, 800}));
    EXPECT_EQ(r.lease_start, at(1'500));
}

// Not hammering: a foreign hold of a minute costs one attempt every 2s once the backoff is up.
TEST_F(VirtualWaiter, ALongForeignHoldIsLookedAtEveryTwoSecondsAtMost) {
    lock.foreign = true;
    lock.expires = at(60'000);
    WaitResult r = wait_for(milliseconds(90'000));
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(r.lease_start, at(60'001));
    std::vector<long long> g = gaps();
    for (long long gap : g) EXPECT_LE(gap, 2'000);
    // 100+200+400+800+1600 = 3.1s, then 2s steps to 59.1s, then the last to the expiry + 1ms.
    EXPECT_EQ(g.size(), 5u + 28u + 1u);
    EXPECT_EQ(g.back(), 901);
}

// The recheck never overshoots the foreign TTL: the key's expiry is still the other bound.
TEST_F(VirtualWaiter, AForeignHoldersExpiryBoundsTheRecheck) {
    lock.foreign = true;
    lock.expires = at(250);
    WaitResult r = wait_for(milliseconds(30'000));
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(gaps(), (std::vector<long long>{100, 151}));
    EXPECT_EQ(r.lease_start, at(251));
}

// A foreign key without a TTL: looked at with the same backoff, never beyond no_ttl_recheck.
TEST_F(VirtualWaiter, AForeignKeyWithoutTtlIsLookedAtWithTheSameBackoff) {
    lock.foreign = true;
    lock.released = at(5'000);
    WaitResult r = wait_for(milliseconds(30'000));
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(gaps(), (std::vector<long long>{100, 200, 400, 800, 1'000, 1'000, 1'000, 1'000}));
    EXPECT_EQ(r.lease_start, at(5'500));
}

// Permits holders always wake the queue: no info in the reply is not a foreign holder there.
TEST_F(VirtualWaiter, APermitsLockIsNotRecheckedEarly) {
    lock.foreign = true;  // a permits busy reply carries no holder info
    lock.permits_n = 3;
    lock.expires = at(20'000);
    WaitResult r = wait_for(milliseconds(30'000));
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(gaps(), (std::vector<long long>{20'001}));
}

// The lock reserved for the queue's head (its key gone, no holder info): the head's hand-off
// wakes us, so the waiter blocks for the reservation (at most the longest recheck, 2s), not
// every 100ms (races.bats "a wake-up taken by a waiter that then dies is not lost").
TEST_F(VirtualWaiter, ALockReservedForTheQueuesHeadIsNotRecheckedEarly) {
    lock.expires = at(0);
    lock.reserved_until = at(1'800);
    WaitResult r = wait_for(milliseconds(30'000));
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(gaps(), (std::vector<long long>{1'801}));
    EXPECT_EQ(lock.key_looks, 1);
}

// A longer reservation is looked at every 2s: were the key an application's that went between
// the attempt and the look, the wait would not last its TTL.
TEST_F(VirtualWaiter, ALongReservationIsLookedAtEveryTwoSeconds) {
    lock.expires = at(0);
    lock.reserved_until = at(5'000);
    WaitResult r = wait_for(milliseconds(30'000));
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(gaps(), (std::vector<long long>{2'000, 2'000, 1'001}));
}

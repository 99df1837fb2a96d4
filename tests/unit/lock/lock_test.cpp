// The lock protocol against a real redis-server (skipped when none is installed): fences grow,
// only the token's owner renews or releases, scripts survive SCRIPT FLUSH, and a key of the
// wrong type is a DataError.
#include "lock/node/lock.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>
#include <thread>

#include "lock/node/keys.hpp"
#include "lock/node/ledger_io.hpp"
#include "lock/node/permits.hpp"
#include "lock/node/scripts.hpp"
#include "lock/node/shared.hpp"
#include "lock/node/token.hpp"
#include "redis_server.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

using namespace redlock;
using std::chrono::milliseconds;

namespace {

class Lock : public unit::RedisServerTest {
  protected:
    LockNode node{conn};
    LockKeys keys = LockKeys::make("job", "test:");
};

}  // namespace

TEST_F(Lock, AcquireStoresThePlainTokenWithTheTtl) {
    std::string token = new_token();
    AcquireResult r = node.acquire(keys, token, milliseconds(5000));
    ASSERT_TRUE(r.acquired);
    EXPECT_EQ(raw({"GET", "test:job"}), token);
    long long pttl = std::stoll(raw({"PTTL", "test:job"}));
    EXPECT_GT(pttl, 4000);
    EXPECT_LE(pttl, 5000);
    // The counter never expires.
    EXPECT_EQ(raw({"PTTL", keys.fence}), "-1");
}

// By one at least: the counter is first raised to Redis's clock in microseconds when it lags.
TEST_F(Lock, FencesGrowAndSurviveRelease) {
    std::string t1 = new_token(), t2 = new_token();
    AcquireResult a = node.acquire(keys, t1, milliseconds(5000));
    ASSERT_TRUE(a.acquired);
    EXPECT_GT(a.fence, 0);
    EXPECT_EQ(node.release(keys, t1), ReleaseResult::released);
    AcquireResult b = node.acquire(keys, t2, milliseconds(5000));
    ASSERT_TRUE(b.acquired);
    EXPECT_GT(b.fence, a.fence);
}

TEST_F(Lock, FenceNeverGoesBelowTheServersClockInMicroseconds) {
    raw({"SET", "{test:job}:fence", "5"});
    AcquireResult a = node.acquire(keys, new_token(), milliseconds(5000));
    ASSERT_TRUE(a.acquired);
    // 2026-01-01 in microseconds: a counter set back (failover, restart) is raised to the clock.
    EXPECT_GT(a.fence, 1767225600000000LL);
}

// A quorum's fence floor (acquire.lua's ARGV[10]): a floor above the clock and the counter makes
// the fence one above it, the same on every node given it; one below them changes nothing; one
// that is not a plain decimal of at most 18 digits is no floor.
TEST_F(Lock, TheFenceFloorRaisesTheFenceAndIsIgnoredWhenMalformed) {
    auto acquire_with = [&](std::optional<long long> floor, const std::string& counter) {
        raw("FLUSHALL");
        raw({"SET", keys.fence, counter});
        node.set_fence_floor(floor);
        AcquireResult r = node.acquire(keys, new_token(), milliseconds(5000));
        EXPECT_TRUE(r.acquired);
        return r.fence;
    };
    const long long above = 9'000'000'000'000'000LL;  // 2255 in microseconds: above the clock
    EXPECT_EQ(acquire_with(above, "5"), above + 1);
    EXPECT_EQ(acquire_with(above, std::to_string(above + 40)), above + 41);
    const long long below = 1'000'000LL;
    long long fence = acquire_with(below, "5");
    EXPECT_GT(fence, 1767225600000000LL);  // the clock's, as without a floor
    EXPECT_LT(fence, above);
    // The script's own check, past the client's: a raw ARGV[10] of 19 digits, or with a sign
    // or a leading zero, is no floor (the fence comes from the clock).
    for (const char* bad : {"1000000000000000000", "-9000000000000000", "09000000000000000", "9e15",
                            " 9000000000000000"}) {
        raw("FLUSHALL");
        Reply r = scripts::acquire().run(
            conn, {keys.key, keys.fence, keys.info, keys.wait, keys.ledger},
            {new_token(), "5000", "", keys.wake, "5000", "1000", "", "", "0", bad}, soon());
        ASSERT_TRUE(r->is_array()) << bad;
        std::string got = raw({"GET", keys.fence});
        EXPECT_LT(got.size(), 18u) << bad << " gave " << got;  // 16 digits: the clock's
    }
    node.set_fence_floor(std::nullopt);
}

TEST_F(Lock, BusyLockReportsTheHoldersTtl) {
    raw({"SET", "test:job", "someone", "PX", "8000"});
    AcquireResult r = node.acquire(keys, new_token(), milliseconds(5000));
    EXPECT_FALSE(r.acquired);
    EXPECT_GT(r.holder_pttl, 7000);
    EXPECT_EQ(raw({"GET", "test:job"}), "someone");
    raw({"SET", "test:job", "forever"});
    EXPECT_EQ(node.acquire(keys, new_token(), milliseconds(5000)).holder_pttl, -1);
}

TEST_F(Lock, OnlyTheOwnerRenews) {
    std::string token = new_token();
    ASSERT_TRUE(node.acquire(keys, token, milliseconds(1000)).acquired);
    EXPECT_EQ(node.renew(keys, token, milliseconds(9000), soon()), RenewResult::renewed);
    EXPECT_GT(std::stoll(raw({"PTTL", "test:job"})), 8000);
    EXPECT_EQ(node.renew(keys, new_token(), milliseconds(60'000), soon()), RenewResult::not_owner);
    EXPECT_LE(std::stoll(raw({"PTTL", "test:job"})), 9000);
    raw({"DEL", "test:job"});
    EXPECT_EQ(node.renew(keys, token, milliseconds(9000), soon()), RenewResult::not_owner);
    EXPECT_EQ(raw({"EXISTS", "test:job"}), "0");
}

TEST_F(Lock, ReleaseNeverDeletesAnotherTokensLock) {
    std::string token = new_token();
    ASSERT_TRUE(node.acquire(keys, token, milliseconds(5000)).acquired);
    raw({"SET", "test:job", "other"});
    EXPECT_EQ(node.release(keys, token), ReleaseResult::not_owner);
    EXPECT_EQ(raw({"GET", "test:job"}), "other");
    raw({"DEL", "test:job"});
    EXPECT_EQ(node.release(keys, token), ReleaseResult::absent);
}

TEST_F(Lock, ScriptsAreResentAfterScriptFlush) {
    std::string token = new_token();
    ASSERT_TRUE(node.acquire(keys, token, milliseconds(5000)).acquired);
    raw({"SCRIPT", "FLUSH"});
    EXPECT_EQ(node.renew(keys, token, milliseconds(5000), soon()), RenewResult::renewed);
    raw({"SCRIPT", "FLUSH"});
    EXPECT_EQ(node.release(keys, token), ReleaseResult::released);
    EXPECT_EQ(raw({"EXISTS", "test:job"}), "0");
}

// A script the server lost (SCRIPT FLUSH, a restart) is the client's business: -v reports what
// the lock did, not that a script went by EVAL instead of EVALSHA.
TEST_F(Lock, AResentScriptIsNotReportedEvenWithVerbose) {
    std::string token = new_token();
    ASSERT_TRUE(node.acquire(keys, token, milliseconds(5000)).acquired);
    log::set_verbose(true);
    testing::internal::CaptureStderr();
    raw({"SCRIPT", "FLUSH"});
    RenewResult renewed = node.renew(keys, token, milliseconds(5000), soon());
    std::string err = testing::internal::GetCapturedStderr();
    log::set_verbose(false);
    EXPECT_EQ(renewed, RenewResult::renewed);
    EXPECT_EQ(err.find("not cached"), std::string::npos) << err;
}

// A server slow to answer (here CLIENT PAUSE WRITE holds the EVALSHA for 300ms) and then saying
// NOSCRIPT: the acquire's EVAL is a command of its own, with a whole --command-timeout (500ms)
// although the EVALSHA used more than half of its own. A renewal's deadline is its lease and is
// shared: with too little of it left nothing is sent, and the next renewal sends the body at
// once instead of the same EVALSHA again.
TEST_F(Lock, AScriptNotCachedBehindASlowReplyIsSentStill) {
    // How many times Redis ran `command` since the CONFIG RESETSTAT below.
    auto calls_of = [this](const std::string& command) {
        std::string text = raw({"INFO", "commandstats"});
        std::string field = "cmdstat_" + command + ":calls=";
        auto at = text.find(field);
        return at == std::string::npos ? 0 : std::stoll(text.substr(at + field.size()));
    };
    Connection slow(endpoint(), Timeouts{milliseconds(2000), milliseconds(500)});
    LockNode n(slow);
    std::string token = new_token();
    raw({"SCRIPT", "FLUSH"});
    raw({"CONFIG", "RESETSTAT"});
    raw({"CLIENT", "PAUSE", "300", "WRITE"});
    ASSERT_TRUE(n.acquire(keys, token, milliseconds(5000)).acquired);
    EXPECT_EQ(calls_of("evalsha"), 1);
    EXPECT_EQ(calls_of("eval"), 1);
    // The cache was emptied as a whole (the connection's first script met NOSCRIPT): the renew
    // script goes with its body at once, no EVALSHA first.
    EXPECT_EQ(n.renew(keys, token, milliseconds(5000), soon()), RenewResult::renewed);
    EXPECT_EQ(calls_of("evalsha"), 1);
    EXPECT_EQ(calls_of("eval"), 2);

    raw({"SCRIPT", "FLUSH"});
    raw({"CLIENT", "PAUSE", "300", "WRITE"});
    try {
        n.renew(keys, token, milliseconds(5000), BootClock::now() + milliseconds(500));
        ADD_FAILURE() << "the renewal had too little time left to send its script";
    } catch (const RedisUnavailable& e) {
        EXPECT_NE(std::string(e.what()).find("the next try sends it at once"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(calls_of("evalsha"), 2);
    EXPECT_EQ(calls_of("eval"), 2);
    EXPECT_EQ(n.renew(keys, token, milliseconds(5000), soon()), RenewResult::renewed);
    EXPECT_EQ(calls_of("evalsha"), 2);
    EXPECT_EQ(calls_of("eval"), 3);
    // Answered, so cached again: back to EVALSHA.
    EXPECT_EQ(n.renew(keys, token, milliseconds(5000), soon()), RenewResult::renewed);
    EXPECT_EQ(calls_of("evalsha"), 3);
}

TEST_F(Lock, AKeyOfAnotherTypeIsADataErrorAndUntouched) {
    raw({"HSET", "test:job", "f", "v"});
    EXPECT_THROW(node.acquire(keys, new_token(), milliseconds(5000)), DataError);
    EXPECT_EQ(raw({"HGET", "test:job", "f"}), "v");
    // Release treats it as someone else's, never deletes it.
    EXPECT_EQ(node.release(keys, new_token()), ReleaseResult::not_owner);
    EXPECT_EQ(raw({"HGET", "test:job", "f"}), "v");
}

TEST_F(Lock, AFenceCounterThatIsNotANumberLeavesNoLockBehind) {
    raw({"SET", keys.fence, "abc"});
    EXPECT_THROW(node.acquire(keys, new_token(), milliseconds(5000)), DataError);
    EXPECT_EQ(raw({"EXISTS", "test:job"}), "0");
    EXPECT_EQ(raw({"GET", keys.fence}), "abc");
}

// A finished run of the slot, as LockNode::finish records it.
RunRecord slot_run(long long slot, long long period_ms = 3'600'000) {
    RunRecord rec;
    rec.entry.host = "web-1";
    rec.entry.pid = 4120;
    rec.entry.fence = 7;
    rec.entry.exit_status = 0;
    rec.held = true;
    rec.ledger_size = 10;
    rec.slot = slot;
    rec.slot_start_ms = slot * period_ms;
    rec.once_ttl = milliseconds(60'000);
    return rec;
}

// The restart guard (issue 38; restart_guard_left in lib/queue.lua). The test server is seconds
// old and flushed before every test, as a server restarted without persistence is: with a guard
// of an hour a free lock without a fence counter is held back, and nothing is written.
TEST_F(Lock, TheRestartGuardHoldsAFreeLockWithoutAFenceCounterBack) {
    node.set_restart_guard(milliseconds(3'600'000));
    AcquireResult r = node.acquire(keys, new_token(), milliseconds(5000));
    EXPECT_FALSE(r.acquired);
    ASSERT_TRUE(r.restart_uptime_s);
    EXPECT_LT(*r.restart_uptime_s, 3600);
    // Counted from the uptime's lower bound: a second less than INFO shows.
    EXPECT_EQ(r.holder_pttl, 3'600'000 - (*r.restart_uptime_s - 1) * 1000);
    EXPECT_EQ(raw({"EXISTS", keys.key}), "0");
    EXPECT_EQ(raw({"EXISTS", keys.fence}), "0");
    // A guard of 0 is no guard.
    node.set_restart_guard(milliseconds(0));
    EXPECT_TRUE(node.acquire(keys, new_token(), milliseconds(5000)).acquired);
}

// A name whose counter survived pays nothing and waits for nothing, however young the server.
TEST_F(Lock, TheRestartGuardLetsANameWithAFenceCounterIn) {
    raw({"SET", keys.fence, "41"});
    node.set_restart_guard(milliseconds(3'600'000));
    EXPECT_TRUE(node.acquire(keys, new_token(), milliseconds(5000)).acquired);
}

// A waiter held back joins the queue as behind a holder, blocking for the time left at most.
TEST_F(Lock, AWaiterHeldBackByTheRestartGuardJoinsTheQueue) {
    node.set_restart_guard(milliseconds(3'600'000));
    const std::string token = new_token();
    AcquireResult r = node.acquire(keys, token, milliseconds(5000), nullptr, Queueing::wait);
    EXPECT_FALSE(r.acquired);
    EXPECT_TRUE(r.restart_uptime_s);
    EXPECT_EQ(raw({"LINDEX", keys.wait, "0"}), token);
    EXPECT_EQ(raw({"EXISTS", keys.wake_key(token) + ":alive"}), "1");
}

// Permits and shared holders are held back the same way, and let in with a counter.
TEST_F(Lock, TheRestartGuardHoldsPermitsAndSharedHoldersBack) {
    LockNode permits{conn, 3}, shared{conn, 1, true};
    for (LockNode* n : {&permits, &shared}) {
        raw("FLUSHALL");
        n->set_restart_guard(milliseconds(3'600'000));
        AcquireResult r = n->acquire(keys, new_token(), milliseconds(5000));
        EXPECT_FALSE(r.acquired) << n->permits();
        EXPECT_TRUE(r.restart_uptime_s) << n->permits();
        EXPECT_EQ(raw({"EXISTS", keys.key}), "0");
        raw({"SET", keys.fence, "41"});
        EXPECT_TRUE(n->acquire(keys, new_token(), milliseconds(5000)).acquired) << n->permits();
    }
}

// --once-per: a slot that began before the server (re)started may have run before the data was
// lost, so it is skipped at once (not held back first); with the counter there, it runs.
TEST_F(Lock, TheRestartGuardSkipsAOncePerSlotThatBeganBeforeTheRestart) {
    // Days whose slot began twelve hours ago (by Redis's clock): long before the test server.
    OncePer day;
    day.period = milliseconds(86'400'000);
    Reply time = conn.command({"TIME"});
    const long long now_ms = std::stoll(std::string((*time)[0].text())) * 1000;
    day.offset = milliseconds((now_ms - 43'200'000) % 86'400'000);
    node.set_once_per(day);
    node.set_restart_guard(milliseconds(3'600'000));
    AcquireResult r = node.acquire(keys, new_token(), milliseconds(5000));
    EXPECT_FALSE(r.acquired);
    ASSERT_TRUE(r.slot_done);
    EXPECT_TRUE(r.slot_done->restart_s);
    EXPECT_TRUE(r.slot);
    EXPECT_EQ(raw({"EXISTS", keys.key}), "0");
    raw({"SET", keys.fence, "41"});
    AcquireResult again = node.acquire(keys, new_token(), milliseconds(5000));
    EXPECT_TRUE(again.acquired);
}

// --once-per in the acquire itself: the slot comes with the lock, and a free lock whose slot's
// run is done is left alone, with that run's record in the answer.
TEST_F(Lock, AnAcquireInADoneSlotSkipsWithoutTakingTheLock) {
    OncePer hour;
    hour.period = milliseconds(3'600'000);
    node.set_once_per(hour);
    std::string t1 = new_token();
    AcquireResult a = node.acquire(keys, t1, milliseconds(5000));
    ASSERT_TRUE(a.acquired);
    ASSERT_TRUE(a.slot);
    FinishResult f = node.finish(keys, t1, milliseconds(0), slot_run(*a.slot));
    EXPECT_EQ(f.release, ReleaseResult::released);
    EXPECT_TRUE(f.record.slot_written);
    EXPECT_EQ(raw({"EXISTS", "test:job"}), "0");
    AcquireResult b = node.acquire(keys, new_token(), milliseconds(5000));
    EXPECT_FALSE(b.acquired);
    ASSERT_TRUE(b.slot_done);
    EXPECT_EQ(b.slot, a.slot);
    EXPECT_EQ(b.slot_done->host, "web-1");
    EXPECT_EQ(b.slot_done->pid, 4120);
    EXPECT_EQ(raw({"EXISTS", "test:job"}), "0");
    // A slot of another period that began after the recorded one is not done (the record's
    // start moved back to the epoch: this minute always begins after it); without --once-per
    // nothing is checked.
    raw({"HSET", keys.once, "start_ms", "0"});
    OncePer minute;
    minute.period = milliseconds(60'000);
    node.set_once_per(minute);
    EXPECT_TRUE(node.acquire(keys, new_token(), milliseconds(5000)).acquired);
    raw({"DEL", "test:job"});
    node.set_once_per(std::nullopt);
    AcquireResult c = node.acquire(keys, new_token(), milliseconds(5000));
    EXPECT_TRUE(c.acquired);
    EXPECT_FALSE(c.slot);
}

// The record step never stands between the run and its release, and never releases another's.
TEST_F(Lock, FinishReleasesEvenWhenTheLedgerCannotBeWritten) {
    raw({"SET", keys.ledger, "not-a-list"});
    raw({"SET", keys.once, "not-a-hash"});
    std::string token = new_token();
    ASSERT_TRUE(node.acquire(keys, token, milliseconds(5000)).acquired);
    FinishResult f = node.finish(keys, token, milliseconds(0), slot_run(1));
    EXPECT_EQ(f.release, ReleaseResult::released);
    EXPECT_NE(f.record.problem.find("WRONGTYPE"), std::string::npos);
    EXPECT_FALSE(f.record.slot_written);
    EXPECT_EQ(raw({"EXISTS", "test:job"}), "0");
    EXPECT_EQ(raw({"GET", keys.ledger}), "not-a-list");
    // Someone else's lock: left alone, and the run is recorded as lost.
    raw({"DEL", keys.ledger, keys.once});
    raw({"SET", "test:job", "another-token"});
    f = node.finish(keys, token, milliseconds(0), slot_run(1));
    EXPECT_EQ(f.release, ReleaseResult::not_owner);
    EXPECT_FALSE(f.record.still_held);
    EXPECT_FALSE(f.record.slot_written);
    EXPECT_EQ(raw({"GET", "test:job"}), "another-token");
    EXPECT_NE(raw({"LINDEX", keys.ledger, "0"}).find("outcome=lost"), std::string::npos);
}

// A run that died with its watchdog (lib/abandoned.lua): its holder record, marked with its
// ledger size, outlives the lease (renewals keep it without expiry); once its lock is gone the
// ledger readers show it as abandoned, and the next holder records it, once; a finished run leaves
// no record behind.
HolderInfo ledger_holder(long long pid) {
    HolderInfo info;
    info.host = "web\t1";  // escaped in the entry, as a run's own entry escapes it
    info.pid = pid;
    info.user = "cron";
    info.ledger_size = 5;
    return info;
}

TEST_F(Lock, ARunThatLeftNoEndIsShownAsAbandonedAndTheNextHolderRecordsIt) {
    HolderInfo dead_info = ledger_holder(4242);
    std::string dead = new_token();
    AcquireResult a = node.acquire(keys, dead, milliseconds(5000), &dead_info);
    ASSERT_TRUE(a.acquired);
    EXPECT_EQ(raw({"PTTL", keys.info}), "-1");
    EXPECT_EQ(node.renew(keys, dead, milliseconds(9000), soon()), RenewResult::renewed);
    EXPECT_EQ(raw({"PTTL", keys.info}), "-1");
    // Held by its run: nothing to show.
    EXPECT_TRUE(read_ledger(conn, keys, 10).empty());
    EXPECT_FALSE(read_last_runs(conn, keys).last);
    raw({"DEL", "test:job"});  // the lease ran out

    std::vector<LedgerEntry> shown = read_ledger(conn, keys, 10);
    ASSERT_EQ(shown.size(), 1u);
    EXPECT_EQ(shown[0].outcome, "abandoned");
    EXPECT_EQ(shown[0].pid, 4242);
    EXPECT_EQ(shown[0].host, "web\t1");
    EXPECT_EQ(shown[0].user, "cron");
    EXPECT_EQ(shown[0].fence, a.fence);
    EXPECT_LE(shown[0].start_ms, shown[0].end_ms);
    EXPECT_EQ(shown[0].duration_ms, shown[0].end_ms - shown[0].start_ms);
    ASSERT_TRUE(read_last_runs(conn, keys).last);
    EXPECT_EQ(read_last_runs(conn, keys).last->outcome, "abandoned");
    EXPECT_EQ(raw({"EXISTS", keys.ledger}), "0");  // shown, not yet written

    HolderInfo next_info = ledger_holder(5151);
    std::string next = new_token();
    ASSERT_TRUE(node.acquire(keys, next, milliseconds(5000), &next_info).acquired);
    EXPECT_EQ(raw({"LLEN", keys.ledger}), "1");
    RunRecord rec = slot_run(1);
    rec.slot.reset();
    rec.entry.pid = 5151;
    EXPECT_EQ(node.finish(keys, next, milliseconds(0), rec).release, ReleaseResult::released);
    EXPECT_EQ(raw({"EXISTS", keys.info}), "0");
    std::vector<LedgerEntry> h = read_ledger(conn, keys, 10);
    ASSERT_EQ(h.size(), 2u);
    EXPECT_EQ(h[0].outcome, "ran");
    EXPECT_EQ(h[1].outcome, "abandoned");
    EXPECT_EQ(h[1].pid, 4242);
    EXPECT_EQ(h[1].fence, a.fence);
}

// A run without a ledger leaves no mark: its record expires with the lease, as before.
TEST_F(Lock, ARunWithoutALedgerKeepsItsRecordToTheLease) {
    HolderInfo info = ledger_holder(1);
    info.ledger_size = 0;
    ASSERT_TRUE(node.acquire(keys, new_token(), milliseconds(5000), &info).acquired);
    EXPECT_NE(raw({"PTTL", keys.info}), "-1");
    raw({"DEL", "test:job"});
    EXPECT_TRUE(read_ledger(conn, keys, 10).empty());
}

// A run whose lease ran out while it still ran was taken for abandoned by the next holder; its
// own end, 'lost', replaces that guess, and its record goes.
TEST_F(Lock, ALostRunsOwnEntryReplacesTheAbandonedGuess) {
    HolderInfo slow_info = ledger_holder(4242);
    std::string slow = new_token();
    AcquireResult a = node.acquire(keys, slow, milliseconds(5000), &slow_info);
    ASSERT_TRUE(a.acquired);
    raw({"DEL", "test:job"});
    // Not yet taken again: its end alone deletes its record.
    RunRecord rec = slot_run(1);
    rec.slot.reset();
    rec.entry.pid = 4242;
    rec.entry.fence = a.fence;
    EXPECT_EQ(node.finish(keys, slow, milliseconds(0), rec).release, ReleaseResult::absent);
    EXPECT_EQ(raw({"EXISTS", keys.info}), "0");
    EXPECT_EQ(read_ledger(conn, keys, 10).size(), 1u);

    raw({"DEL", keys.ledger});
    a = node.acquire(keys, slow, milliseconds(5000), &slow_info);
    ASSERT_TRUE(a.acquired);
    raw({"DEL", "test:job"});
    HolderInfo next_info = ledger_holder(5151);
    std::string next = new_token();
    ASSERT_TRUE(node.acquire(keys, next, milliseconds(5000), &next_info).acquired);
    ASSERT_EQ(read_ledger(conn, keys, 10).size(), 1u);
    EXPECT_EQ(read_ledger(conn, keys, 10)[0].outcome, "abandoned");
    rec.entry.fence = a.fence;
    EXPECT_EQ(node.finish(keys, slow, milliseconds(0), rec).release, ReleaseResult::not_owner);
    std::vector<LedgerEntry> h = read_ledger(conn, keys, 10);
    ASSERT_EQ(h.size(), 1u);
    EXPECT_EQ(h[0].outcome, "lost");
    EXPECT_EQ(h[0].fence, a.fence);
    // The next holder's record is its own, untouched.
    EXPECT_EQ(raw({"HGET", keys.info, "token"}), next);
}

// The leftover record is the server's: every number in it is checked where the entry is read
// (decode_entry), and one out of range leaves the entry out rather than showing a made-up run.
TEST_F(Lock, ALeftoverRecordWithNumbersOutOfRangeIsLeftOut) {
    auto shown = [&](std::vector<std::string> fields) {
        raw("FLUSHALL");
        std::vector<std::string> cmd{"HSET", keys.info, "token", "gone", "host", "h", "user", "u"};
        cmd.insert(cmd.end(), fields.begin(), fields.end());
        conn.command(cmd);
        std::vector<LedgerEntry> h = read_ledger(conn, keys, 10);
        return h.empty() ? std::string("none") : h[0].outcome;
    };
    const std::vector<std::string> ok{"ledger", "5", "pid", "7", "fence", "9"};
    EXPECT_EQ(shown(ok), "abandoned");
    EXPECT_EQ(shown({"ledger", "5", "pid", "7", "fence", "9", "acquired_ms", "junk"}), "abandoned");
    EXPECT_EQ(shown({"ledger", "5", "pid", "99999999999", "fence", "9"}), "none");
    EXPECT_EQ(shown({"ledger", "5", "pid", "-1", "fence", "9"}), "none");
    EXPECT_EQ(shown({"ledger", "5", "pid", "7", "fence", "-9"}), "none");
    EXPECT_EQ(shown({"ledger", "5", "pid", "7"}), "none");  // no fence
    EXPECT_EQ(shown({"ledger", "5", "pid", "7", "fence", "9", "acquired_ms", "1"}), "none");
    EXPECT_EQ(shown({"ledger", "0", "pid", "7", "fence", "9"}), "none");  // not marked
    EXPECT_EQ(shown({"ledger", "x", "pid", "7", "fence", "9"}), "none");
    EXPECT_EQ(shown({"pid", "7", "fence", "9"}), "none");
    // A huge ledger size is bounded where it is used: the next holder trims to 10000 at most.
    raw("FLUSHALL");
    raw({"HSET", keys.info, "token", "gone", "ledger", "1e300", "pid", "7", "fence", "9"});
    ASSERT_TRUE(node.acquire(keys, new_token(), milliseconds(5000)).acquired);
    EXPECT_EQ(raw({"LLEN", keys.ledger}), "1");
}

// A permit's finish (permits.lua 'finish') gives back the run's permit and records the run in one
// script: judged by the run's own permit, not by the lock key (which holds the permits record,
// never a token), so a run that kept its permit is 'ran'; the other holder keeps its permit; a
// ledger that cannot be written keeps nothing from being released; a permit taken by another
// token is left alone and the run recorded as lost.
TEST_F(Lock, APermitsFinishReleasesThePermitAndJudgesTheRunByIt) {
    LockNode first{conn, 2}, second{conn, 2};
    std::string t1 = new_token(), t2 = new_token();
    ASSERT_TRUE(first.acquire(keys, t1, milliseconds(5000)).acquired);
    ASSERT_TRUE(second.acquire(keys, t2, milliseconds(5000)).acquired);
    std::string p1 = permit_key_prefix(keys) + "1", p2 = permit_key_prefix(keys) + "2";
    ASSERT_EQ(raw({"GET", p1}), t1);
    RunRecord rec = slot_run(0);
    rec.slot.reset();
    FinishResult f = first.finish(keys, t1, milliseconds(0), rec);
    EXPECT_EQ(f.release, ReleaseResult::released);
    EXPECT_TRUE(f.record.still_held);
    EXPECT_EQ(f.record.problem, "");
    EXPECT_GT(f.record.end_ms, 0);
    EXPECT_EQ(raw({"EXISTS", p1}), "0");
    EXPECT_EQ(raw({"GET", p2}), t2);
    EXPECT_EQ(raw({"GET", "test:job"}), "redlock-permits/2");
    std::string entry = raw({"LINDEX", keys.ledger, "0"});
    EXPECT_NE(entry.find("outcome=ran"), std::string::npos) << entry;
    EXPECT_NE(entry.find("fence=7"), std::string::npos) << entry;

    // A ledger of the wrong type: a warning; the last permit is given back and the key with it.
    raw({"DEL", keys.ledger});
    raw({"SET", keys.ledger, "not-a-list"});
    f = second.finish(keys, t2, milliseconds(0), rec);
    EXPECT_EQ(f.release, ReleaseResult::released);
    EXPECT_NE(f.record.problem.find("WRONGTYPE"), std::string::npos);
    EXPECT_EQ(raw({"EXISTS", "test:job"}), "0");
    EXPECT_EQ(raw({"EXISTS", p2}), "0");
    EXPECT_EQ(raw({"GET", keys.ledger}), "not-a-list");

    // The permit is someone else's now: untouched, and the run is recorded as lost.
    raw({"DEL", keys.ledger});
    std::string t3 = new_token();
    LockNode third{conn, 2};
    ASSERT_TRUE(third.acquire(keys, t3, milliseconds(5000)).acquired);
    ASSERT_EQ(raw({"GET", p1}), t3);
    f = first.finish(keys, t1, milliseconds(0), rec);
    EXPECT_EQ(f.release, ReleaseResult::not_owner);
    EXPECT_FALSE(f.record.still_held);
    EXPECT_EQ(raw({"GET", p1}), t3);
    EXPECT_NE(raw({"LINDEX", keys.ledger, "0"}).find("outcome=lost"), std::string::npos);
}

// An acquire re-sent after its reply was lost (same token) answers the fence this token drew, not
// the counter's current value: another holder may have drawn a fence in between, and two
// concurrent holders must never carry the same fence, with or without holder info.
TEST_F(Lock, AResentPermitAcquireAnswersItsOwnFenceNotALaterHolders) {
    for (bool with_info : {false, true}) {
        raw("FLUSHALL");
        HolderInfo info;
        info.host = "h";
        const HolderInfo* hi = with_info ? &info : nullptr;
        LockNode a{conn, 3}, b{conn, 3};
        std::string ta = new_token(), tb = new_token();
        AcquireResult first = a.acquire(keys, ta, milliseconds(5000), hi);
        ASSERT_TRUE(first.acquired);
        AcquireResult other = b.acquire(keys, tb, milliseconds(5000), hi);
        ASSERT_TRUE(other.acquired);
        ASSERT_GT(other.fence, first.fence);
        AcquireResult again = a.acquire(keys, ta, milliseconds(5000), hi);
        ASSERT_TRUE(again.acquired);
        EXPECT_EQ(again.permit, first.permit) << with_info;
        EXPECT_EQ(again.fence, first.fence) << with_info;
        // And the counter, which a quorum's fence must exceed.
        ASSERT_TRUE(again.counter) << with_info;
        EXPECT_GE(*again.counter, other.fence) << with_info;
        // Still after a renewal, and the fence record goes with the permit.
        ASSERT_EQ(a.renew(keys, ta, milliseconds(5000), soon()), RenewResult::renewed);
        EXPECT_EQ(a.acquire(keys, ta, milliseconds(5000), hi).fence, first.fence) << with_info;
        EXPECT_EQ(a.release(keys, ta), ReleaseResult::released);
        std::string p = permit_key_prefix(keys) + std::to_string(first.permit);
        EXPECT_EQ(raw({"EXISTS", p, p + ":fence"}), "0") << with_info;
    }
}

// A quorum's permits (permits.lua with tickets): each node gives its k-th queued waiter the k-th
// free permit, whatever order the waiters' requests reach it in, so that nodes with the same
// permits free give a waiter the same permit. Stepping back keeps the waiter's place; settling
// on a permit gives back any other this node gave the token.
TEST_F(Lock, QuorumWaitersTakePermitsByTicketNotByArrival) {
    LockNode h1{conn, 3}, h2{conn, 3}, h3{conn, 3}, early{conn, 3}, late{conn, 3};
    std::string t1 = new_token(), t2 = new_token(), t3 = new_token();
    std::string te = new_token(), tl = new_token();
    ASSERT_TRUE(h1.acquire(keys, t1, milliseconds(5000)).acquired);
    ASSERT_TRUE(h2.acquire(keys, t2, milliseconds(5000)).acquired);
    ASSERT_TRUE(h3.acquire(keys, t3, milliseconds(5000)).acquired);
    // The later ticket queues first.
    EXPECT_FALSE(late.acquire(keys, tl, milliseconds(5000), nullptr, Queueing::wait, 200).acquired);
    EXPECT_FALSE(
        early.acquire(keys, te, milliseconds(5000), nullptr, Queueing::wait, 100).acquired);
    EXPECT_EQ(raw({"ZSCORE", keys.wait, te}), "100");
    EXPECT_EQ(raw({"ZSCORE", keys.wait, tl}), "200");
    ASSERT_EQ(h1.release(keys, t1), ReleaseResult::released);
    ASSERT_EQ(h3.release(keys, t3), ReleaseResult::released);
    // Permits 1 and 3 are free; the later ticket asks first and still gets the second of them.
    AcquireResult l = late.acquire(keys, tl, milliseconds(5000), nullptr, Queueing::wait, 200);
    ASSERT_TRUE(l.acquired);
    EXPECT_EQ(l.permit, 3);
    AcquireResult e = early.acquire(keys, te, milliseconds(5000), nullptr, Queueing::wait, 100);
    ASSERT_TRUE(e.acquired);
    EXPECT_EQ(e.permit, 1);
    EXPECT_EQ(raw({"EXISTS", keys.wait}), "0");

    // Settling on permit 1 gives back permit 3 here (a node that chose otherwise)...
    std::string p = permit_key_prefix(keys);
    late.settle_permit(keys, tl, 1);
    EXPECT_EQ(raw({"EXISTS", p + "3"}), "0");
    // ...and keeps the permit that was agreed on.
    early.settle_permit(keys, te, 1);
    EXPECT_EQ(raw({"GET", p + "1"}), te);

    // A step back gives the permit back and keeps the place at the ticket.
    early.step_back(keys, te, 100, milliseconds(5000));
    EXPECT_EQ(raw({"EXISTS", p + "1"}), "0");
    EXPECT_EQ(raw({"ZSCORE", keys.wait, te}), "100");
}

// A quorum's shared waiters (shared.lua with tickets): queued by ticket beside exclusive ones,
// kept out behind an exclusive waiter with an earlier ticket whatever the arrival order, and a
// step back keeps the place with the shared mark.
TEST_F(Lock, QuorumSharedWaitersQueueByTicketBehindAnEarlierExclusiveWaiter) {
    LockNode holder{conn}, writer{conn}, reader{conn, 1, true};
    std::string th = new_token(), tw = new_token(), tr = new_token();
    ASSERT_TRUE(holder.acquire(keys, th, milliseconds(5000)).acquired);
    // The reader's later ticket arrives first; the writer's earlier one after it.
    EXPECT_FALSE(
        reader.acquire(keys, tr, milliseconds(5000), nullptr, Queueing::wait, 200).acquired);
    EXPECT_FALSE(
        writer.acquire(keys, tw, milliseconds(5000), nullptr, Queueing::wait, 100).acquired);
    ASSERT_EQ(holder.release(keys, th), ReleaseResult::released);
    // Free now, but the writer is queued ahead of the reader: the reader stays out.
    EXPECT_FALSE(
        reader.acquire(keys, tr, milliseconds(5000), nullptr, Queueing::wait, 200).acquired);
    ASSERT_TRUE(
        writer.acquire(keys, tw, milliseconds(5000), nullptr, Queueing::wait, 100).acquired);
    ASSERT_EQ(writer.release(keys, tw), ReleaseResult::released);
    ASSERT_TRUE(
        reader.acquire(keys, tr, milliseconds(5000), nullptr, Queueing::wait, 200).acquired);
    // A step back ends the hold and keeps the place, marked as a shared waiter.
    reader.step_back(keys, tr, 200, milliseconds(5000));
    EXPECT_EQ(raw({"EXISTS", keys.key}), "0");
    EXPECT_EQ(raw({"ZSCORE", keys.wait, tr}), "200");
    EXPECT_EQ(raw({"GET", keys.wake + tr + ":alive"}), "shared");
}

// The same for a shared hold (shared.lua 'finish'), judged by the run's own hold in the holders.
TEST_F(Lock, ASharedFinishEndsTheHoldAndJudgesTheRunByIt) {
    LockNode first{conn, 1, true}, second{conn, 1, true};
    std::string t1 = new_token(), t2 = new_token();
    ASSERT_TRUE(first.acquire(keys, t1, milliseconds(5000)).acquired);
    ASSERT_TRUE(second.acquire(keys, t2, milliseconds(5000)).acquired);
    std::string holders = shared_holders_key(keys);
    RunRecord rec = slot_run(0);
    rec.slot.reset();
    FinishResult f = first.finish(keys, t1, milliseconds(0), rec);
    EXPECT_EQ(f.release, ReleaseResult::released);
    EXPECT_TRUE(f.record.still_held);
    EXPECT_EQ(f.record.problem, "");
    EXPECT_EQ(raw({"ZSCORE", holders, t1}), "");
    EXPECT_NE(raw({"ZSCORE", holders, t2}), "");
    EXPECT_EQ(raw({"GET", "test:job"}), "redlock-shared");
    std::string entry = raw({"LINDEX", keys.ledger, "0"});
    EXPECT_NE(entry.find("outcome=ran"), std::string::npos) << entry;

    // Its hold ended from outside (as when it expired): the other holder is untouched, and the
    // run is recorded as lost.
    std::string t3 = new_token();
    ASSERT_TRUE(first.acquire(keys, t3, milliseconds(5000)).acquired);
    raw({"ZREM", holders, t3});
    f = first.finish(keys, t3, milliseconds(0), rec);
    EXPECT_EQ(f.release, ReleaseResult::not_owner);
    EXPECT_FALSE(f.record.still_held);
    EXPECT_NE(raw({"ZSCORE", holders, t2}), "");
    EXPECT_NE(raw({"LINDEX", keys.ledger, "0"}).find("outcome=lost"), std::string::npos);

    // A ledger of the wrong type: a warning; the last hold ends and the marker with it.
    raw({"DEL", keys.ledger});
    raw({"SET", keys.ledger, "not-a-list"});
    f = second.finish(keys, t2, milliseconds(0), rec);
    EXPECT_EQ(f.release, ReleaseResult::released);
    EXPECT_TRUE(f.record.still_held);
    EXPECT_NE(f.record.problem.find("WRONGTYPE"), std::string::npos);
    EXPECT_EQ(raw({"EXISTS", "test:job"}), "0");
    EXPECT_EQ(raw({"EXISTS", holders}), "0");
}

// A busy reply is the same whether the run waits or not (a waiter joins the queue only after the
// reply is made), so each state below is asked both ways and the replies compared, Redis's clock
// ('now_ms') aside. The key has no TTL, so PTTL is exact. (It was written for a separate busy
// shortcut at the script's top; TheAcquireScriptAnswersAndWritesAsItsReference below compares
// the whole script with the one before issue 21's cuts.)
TEST_F(Lock, TheBusyShortcutRepliesExactlyAsTheFullChecks) {
    auto flat = [](const Reply& r) {
        std::string out;
        auto add = [&](const redisReply& e, auto& self) -> void {
            switch (e.type) {
                case REDIS_REPLY_ARRAY:
                    out += "[";
                    for (std::size_t i = 0; i < e.elements; ++i) self(*e.element[i], self);
                    out += "]";
                    break;
                case REDIS_REPLY_INTEGER:
                    out += "i" + std::to_string(e.integer) + " ";
                    break;
                case REDIS_REPLY_NIL:
                    out += "nil ";
                    break;
                default:
                    out += std::to_string(e.type) + ":" + std::string(e.str, e.len) + " ";
            }
        };
        add(r->raw(), add);
        if (auto at = out.find("now_ms "); at != std::string::npos)
            out.replace(at, out.find(' ', at + 7) - at, "now_ms X");
        return out;
    };
    const std::string mine = new_token(), theirs = new_token();
    auto ask = [&](bool waits) {
        std::vector<std::string> args{mine, "5000", waits ? "1" : "", keys.wake, "5000", "1000", "",
                                      "1",  "0",    "host",           "h",       "pid",  "1"};
        return flat(scripts::acquire().run(conn, {keys.key, keys.fence, keys.info, keys.wait}, args,
                                           soon()));
    };
    auto info = [&](const std::string& token) {
        raw({"HSET", keys.info, "token", token, "fence", "7", "host", "x", "pid", "2"});
    };
    struct Case {
        const char* what;
        std::function<void()> set;
    };
    const std::vector<Case> cases{
        {"held, no counter, no info",
         [&] {
             raw({"SET", keys.key, theirs});
         }},
        {"held with its info",
         [&] {
             raw({"SET", keys.key, theirs});
             raw({"SET", keys.fence, "41"});
             info(theirs);
         }},
        {"held, info of an older token",
         [&] {
             raw({"SET", keys.key, theirs});
             info(new_token());
         }},
        {"held, info not a hash",
         [&] {
             raw({"SET", keys.key, theirs});
             raw({"SET", keys.info, theirs});
         }},
        {"held, empty token",
         [&] {
             raw({"SET", keys.key, ""});
             info("");
         }},
        {"held, counter 0",
         [&] {
             raw({"SET", keys.key, theirs});
             raw({"SET", keys.fence, "0"});
         }},
        {"held, counter at the limit",
         [&] {
             raw({"SET", keys.key, theirs});
             raw({"SET", keys.fence, "4611686018427387902"});
             info(theirs);
         }},
        {"held, counter past the limit",
         [&] {
             raw({"SET", keys.key, theirs});
             raw({"SET", keys.fence, "4611686018427387903"});
         }},
        {"held, counter of 20 digits",
         [&] {
             raw({"SET", keys.key, theirs});
             raw({"SET", keys.fence, "10000000000000000000"});
         }},
        {"held, counter with a leading zero",
         [&] {
             raw({"SET", keys.key, theirs});
             raw({"SET", keys.fence, "0123"});
         }},
        {"held, counter not a number",
         [&] {
             raw({"SET", keys.key, theirs});
             raw({"SET", keys.fence, "12a"});
         }},
        {"held, counter a list",
         [&] {
             raw({"SET", keys.key, theirs});
             raw({"RPUSH", keys.fence, "1"});
         }},
        {"held with --permits",
         [&] {
             raw({"SET", keys.key, "redlock-permits/3"});
         }},
        {"the key a hash",
         [&] {
             raw({"HSET", keys.key, "f", "v"});
         }},
        {"our own token",
         [&] {
             raw({"SET", keys.key, mine});
             raw({"SET", keys.fence, "99"});
             info(mine);
         }},
    };
    for (const Case& c : cases) {
        raw("FLUSHALL");
        c.set();
        std::string shortcut = ask(false);
        raw("FLUSHALL");
        c.set();
        EXPECT_EQ(shortcut, ask(true)) << c.what;
    }
    // The shortcut's reply carries the holder's info, as the full one does.
    raw("FLUSHALL");
    cases[1].set();
    EXPECT_NE(ask(false).find("1:host 1:x 1:pid 1:2 1:now_ms X"), std::string::npos);
}

// A run that shows no holder (-q without --wait) asks for none: its busy acquire says only the
// holder's TTL, exactly as busy, and one that shows it still gets the holder's info.
TEST_F(Lock, ABusyAcquireCarriesTheHolderOnlyWhenAskedFor) {
    HolderInfo me;
    me.host = "h";
    me.pid = 42;
    me.user = "u";
    const std::string holder = new_token();
    ASSERT_TRUE(node.acquire(keys, holder, milliseconds(5000), &me).acquired);
    AcquireResult shown = node.acquire(keys, new_token(), milliseconds(5000), &me);
    EXPECT_FALSE(shown.acquired);
    ASSERT_TRUE(shown.holder);
    EXPECT_EQ(shown.holder->token, holder);
    EXPECT_EQ(shown.holder->host, "h");
    EXPECT_EQ(shown.holder->pid, 42);
    node.set_busy_holder(false);
    AcquireResult quiet = node.acquire(keys, new_token(), milliseconds(5000), &me);
    EXPECT_FALSE(quiet.acquired);
    EXPECT_FALSE(quiet.holder);
    EXPECT_GT(quiet.holder_pttl, 0);
    EXPECT_LE(quiet.holder_pttl, 5000);
    // Free again, the quiet run takes the lock and records its own info as any run does.
    ASSERT_EQ(node.release(keys, holder), ReleaseResult::released);
    const std::string next = new_token();
    ASSERT_TRUE(node.acquire(keys, next, milliseconds(5000), &me).acquired);
    EXPECT_EQ(raw({"HGET", keys.info, "token"}), next);
    EXPECT_EQ(raw({"HGET", keys.info, "host"}), "h");
}

namespace redlock::scripts_src {
extern const char* const acquire_reference_lua;
extern const char* const acquire_reference_lua_sha1;
}  // namespace redlock::scripts_src

// acquire.lua makes as few Redis calls as it can (issue 21: a GET under pcall instead of TYPE
// then GET, one LINDEX for an empty queue, one clock read): it must still answer and write
// exactly as the script before those cuts (tests/unit/lock/acquire_reference.lua), in every
// state a lock, its fence counter, its holder info, its queue and its once-per record can be in,
// waiting or not, with and without --once-per and holder info. Without the busy reply's holder
// flag (ARGV[8] '') a busy reply is the reference's first two elements, {0, pttl}, and nothing
// else changes. Times (13-digit ms, 16-digit fences from the clock) are masked; TTLs are
// compared as set or not.
TEST_F(Lock, TheAcquireScriptAnswersAndWritesAsItsReference) {
    static const Script reference("acquire_reference", scripts_src::acquire_reference_lua,
                                  scripts_src::acquire_reference_lua_sha1);
    // One reply as words, errors without the "script: <sha>, on @user_script:N." that names
    // the script and the line.
    auto words = [](const redisReply& e, auto& self, std::vector<std::string>& out) -> void {
        switch (e.type) {
            case REDIS_REPLY_ARRAY:
                out.push_back("[");
                for (std::size_t i = 0; i < e.elements; ++i) self(*e.element[i], self, out);
                out.push_back("]");
                break;
            case REDIS_REPLY_INTEGER:
                out.push_back("i:" + std::to_string(e.integer));
                break;
            case REDIS_REPLY_NIL:
                out.push_back("nil");
                break;
            case REDIS_REPLY_ERROR: {
                std::string msg(e.str, e.len);
                out.push_back("e:" + msg.substr(0, msg.find(" script: ")));
                break;
            }
            default:
                out.push_back("s:" + std::string(e.str, e.len));
        }
    };
    auto masked = [](std::vector<std::string> w) {
        std::string out;
        for (std::string& x : w) {
            std::string v = x.substr(x.find(':') + 1);
            bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
            if (digits && (v.size() == 13 || v.size() == 16))
                x = x.substr(0, x.find(':') + 1) + "T";
            // A waiter's ':who' record starts with the time it joined (lib/queue.lua).
            else if (v.size() > 13 && v.find_first_not_of("0123456789") == 13 && v[13] == ' ')
                x = x.substr(0, x.find(':') + 1) + "T" + v.substr(13);
            out += x + " ";
        }
        return out;
    };
    auto reply_of = [&](const Reply& r) {
        std::vector<std::string> w;
        words(r->raw(), words, w);
        return w;
    };
    // Every key there is, with its type, its content and whether it has a TTL.
    auto keyspace = [&] {
        std::vector<std::string> w;
        Reply names = conn.command({"KEYS", "*"});
        std::vector<std::string> sorted;
        for (std::size_t i = 0; i < names->size(); ++i) sorted.emplace_back((*names)[i].text());
        std::sort(sorted.begin(), sorted.end());
        for (const std::string& k : sorted) {
            std::string type = raw({"TYPE", k});
            w.push_back(k + "(" + type + ")");
            Reply v = type == "string" ? conn.command({"GET", k})
                      : type == "hash" ? conn.command({"HGETALL", k})
                      : type == "list" ? conn.command({"LRANGE", k, "0", "-1"})
                                       : conn.command({"ZRANGE", k, "0", "-1", "WITHSCORES"});
            if (type == "hash") {  // HGETALL's order is the hash's own: compared as a set
                std::vector<std::string> pairs;
                for (std::size_t i = 0; i + 1 < v->size(); i += 2)
                    pairs.push_back(std::string((*v)[i].text()) + ":" +
                                    std::string((*v)[i + 1].text()));
                std::sort(pairs.begin(), pairs.end());
                w.insert(w.end(), pairs.begin(), pairs.end());
            } else {
                words(v->raw(), words, w);
            }
            w.push_back(raw({"PTTL", k}) == "-1" ? "no-ttl" : "ttl");
        }
        return w;
    };
    const std::string mine = new_token(), theirs = new_token(), other = new_token();
    const std::string queue = keys.wait, wake = keys.wake;
    auto alive = [&](const std::string& t) { raw({"SET", wake + t + ":alive", "1"}); };
    auto info = [&](const std::string& t) {
        raw({"HSET", keys.info, "token", t, "fence", "7", "host", "x", "pid", "2", "note", "n"});
    };
    auto once_done = [&](const std::string& slot) {
        raw({"HSET", keys.once, "slot", slot, "host", "y", "pid", "3", "outcome", "ran"});
    };
    struct Case {
        const char* what;
        std::function<void()> set;
    };
    const std::string ahead = "12345678901234567";  // above the clock in microseconds
    auto counter = [&](const std::string& c) { return [&, c] { raw({"SET", keys.fence, c}); }; };
    auto held = [&](const std::string& c) {
        return [&, c] {
            raw({"SET", keys.key, theirs});
            raw({"SET", keys.fence, c});
            info(theirs);
        };
    };
    const std::vector<Case> cases{
        {"free, nothing there", [] {}},
        {"free, counter ahead of the clock", counter(ahead)},
        {"free, counter behind the clock", counter("41")},
        {"free, counter 0", counter("0")},
        {"free, counter of 18 digits", counter("123456789012345678")},
        {"free, counter at the limit", counter("4611686018427387902")},
        {"free, counter past the limit", counter("4611686018427387903")},
        {"free, counter of 20 digits", counter("10000000000000000000")},
        {"free, counter with a leading zero", counter("0123")},
        {"free, counter not a number", counter("12a")},
        {"free, counter empty", counter("")},
        {"free, counter a list",
         [&] {
             raw({"RPUSH", keys.fence, "1"});
         }},
        {"free, stale info of another token",
         [&] {
             raw({"SET", keys.fence, ahead});
             info(theirs);
         }},
        {"free, info not a hash",
         [&] {
             raw({"SET", keys.info, "x"});
         }},
        {"free, a dead head alone",
         [&] {
             raw({"RPUSH", queue, theirs});
         }},
        {"free, a dead head, then a live one",
         [&] {
             raw({"RPUSH", queue, theirs, other});
             alive(other);
         }},
        {"free, we are the live head",
         [&] {
             raw({"SET", keys.fence, ahead});
             raw({"RPUSH", queue, mine, other});
             alive(mine);
             alive(other);
             raw({"RPUSH", wake + mine, "1"});
         }},
        {"free, a live head before us",
         [&] {
             raw({"RPUSH", queue, other, mine});
             alive(other);
             alive(mine);
         }},
        {"free, a quorum's queue with a live head",
         [&] {
             raw({"ZADD", queue, "5", other, "7", mine});
             alive(other);
             alive(mine);
         }},
        {"free, a quorum's queue, dead head, then us",
         [&] {
             raw({"ZADD", queue, "5", other, "7", mine});
             alive(mine);
         }},
        {"free, the queue a string",
         [&] {
             raw({"SET", queue, "x"});
         }},
        {"free, the queue a hash",
         [&] {
             raw({"HSET", queue, "f", "v"});
         }},
        {"held, no counter, no info",
         [&] {
             raw({"SET", keys.key, theirs});
         }},
        {"held with its info", held(ahead)},
        {"held, counter 0", held("0")},
        {"held, counter at the limit", held("4611686018427387902")},
        {"held, counter past the limit", held("4611686018427387903")},
        {"held, counter with a leading zero", held("0123")},
        {"held, counter a list",
         [&] {
             raw({"SET", keys.key, theirs});
             raw({"RPUSH", keys.fence, "1"});
         }},
        {"held, info of an older token",
         [&] {
             raw({"SET", keys.key, theirs});
             info(other);
         }},
        {"held, info not a hash",
         [&] {
             raw({"SET", keys.key, theirs});
             raw({"SET", keys.info, theirs});
         }},
        {"held, empty token",
         [&] {
             raw({"SET", keys.key, ""});
             info("");
         }},
        {"held, with waiters",
         [&] {
             held(ahead)();
             raw({"RPUSH", queue, other});
             alive(other);
         }},
        {"held, with a quorum's waiters",
         [&] {
             held(ahead)();
             raw({"ZADD", queue, "5", other});
             alive(other);
         }},
        {"held with --permits",
         [&] {
             raw({"SET", keys.key, "redlock-permits/3"});
         }},
        {"the key a hash",
         [&] {
             raw({"HSET", keys.key, "f", "v"});
         }},
        {"the key a list",
         [&] {
             raw({"RPUSH", keys.key, "v"});
         }},
        {"our own token",
         [&] {
             raw({"SET", keys.key, mine});
             raw({"SET", keys.fence, "99"});
             info(mine);
         }},
        {"our own token, no counter",
         [&] {
             raw({"SET", keys.key, mine});
             info(mine);
         }},
        {"our own token, info of another",
         [&] {
             raw({"SET", keys.key, mine});
             raw({"SET", keys.fence, "0"});
             info(other);
         }},
        {"free, this slot done", [&] { once_done("1"); }},
        {"free, another slot done",
         [&] {
             raw({"SET", keys.fence, ahead});
             once_done("0");
         }},
        {"free, the once-per record a string",
         [&] {
             raw({"SET", keys.once, "x"});
         }},
        {"our own token, this slot done",
         [&] {
             raw({"SET", keys.key, mine});
             raw({"SET", keys.fence, "99"});
             info(mine);
             once_done("1");
         }},
        {"free, we are the live head, this slot done",
         [&] {
             raw({"RPUSH", queue, mine, other});
             alive(mine);
             alive(other);
             once_done("1");
         }},
    };
    // A period of 10^12 ms: the slot is 1 from 2001 to 2033, the same for both scripts.
    const std::vector<std::string> waits{"", "1", "ticket:9"}, once{"", "1000000000000:0"};
    int compared = 0, busy_without_holder = 0;
    for (const Case& c : cases)
        for (const std::string& w : waits)
            for (const std::string& o : once)
                for (bool with_info : {false, true}) {
                    std::vector<std::string> args{mine, "5000", w, wake, "5000", "1000", o};
                    std::vector<std::string> extra;
                    if (with_info) extra = {"host", "h", "pid", "1"};
                    std::vector<std::string> ref_args = args;
                    ref_args.insert(ref_args.end(), extra.begin(), extra.end());
                    const std::vector<std::string> script_keys{keys.key, keys.fence, keys.info,
                                                               keys.wait, keys.once};
                    raw("FLUSHALL");
                    c.set();
                    std::vector<std::string> want =
                        reply_of(reference.run(conn, script_keys, ref_args, soon()));
                    std::vector<std::string> want_keys = keyspace();
                    for (const char* holder : {"1", ""}) {
                        std::vector<std::string> our_args = args;
                        our_args.push_back(holder);
                        our_args.push_back("0");  // no restart guard: the reference has none
                        our_args.push_back("");   // no fence floor (a single node's acquire)
                        our_args.insert(our_args.end(), extra.begin(), extra.end());
                        raw("FLUSHALL");
                        c.set();
                        // acquire.lua takes the run ledger before the once-per record.
                        const std::vector<std::string> our_keys{keys.key,  keys.fence,  keys.info,
                                                                keys.wait, keys.ledger, keys.once};
                        std::vector<std::string> got =
                            reply_of(scripts::acquire().run(conn, our_keys, our_args, soon()));
                        std::vector<std::string> expected = want;
                        // Busy, without the holder: '[', 'i:0', pttl, then only ']'.
                        if (*holder == '\0' && expected.size() > 4 && expected[1] == "i:0") {
                            expected.resize(3);
                            expected.push_back("]");
                            ++busy_without_holder;
                        }
                        std::string where = std::string(c.what) + ", wait '" + w + "', once '" + o +
                                            "', info " + (with_info ? "yes" : "no") +
                                            ", holder flag '" + holder + "'";
                        EXPECT_EQ(masked(got), masked(expected)) << where;
                        EXPECT_EQ(masked(keyspace()), masked(want_keys)) << where;
                        ++compared;
                    }
                }
    EXPECT_EQ(compared, static_cast<int>(cases.size() * 24));
    // The flag did shorten some busy replies (the cases with the holder's info).
    EXPECT_GT(busy_without_holder, 0);
}

// The token is what keeps one holder from renewing or releasing another's lock: 10,000 real
// acquisitions must store 10,000 different tokens.
TEST_F(Lock, TenThousandAcquisitionsStoreTenThousandDistinctTokens) {
    std::set<std::string> stored;
    for (int i = 0; i < 10'000; ++i) {
        std::string token = new_token();
        ASSERT_TRUE(node.acquire(keys, token, milliseconds(5000)).acquired) << i;
        std::string value = raw({"GET", "test:job"});
        ASSERT_EQ(value, token);
        stored.insert(value);
        ASSERT_EQ(node.release(keys, token), ReleaseResult::released) << i;
    }
    EXPECT_EQ(stored.size(), 10'000u);
}

// ---- The hand-off (issue 35, hand_off_head in lib/take.lua) ----

// The release takes the lock for the head that asked for it, as the head's own acquire would:
// its token in the key for the claim window, the next fence, its holder info, the queue left;
// and its wake-up carries the fence. The next waiter is told to look again.
TEST_F(Lock, AReleaseHandsTheFreeLockToTheHeadThatAskedForIt) {
    std::string h = new_token(), first = new_token(), second = new_token();
    AcquireResult held = node.acquire(keys, h, milliseconds(30000));
    ASSERT_TRUE(held.acquired);
    LockNode waiter{conn};
    waiter.set_hand_off(milliseconds(2000));
    HolderInfo info;
    info.host = "waiter-host";
    info.pid = 4242;
    ASSERT_FALSE(waiter.acquire(keys, first, milliseconds(30000), &info, Queueing::wait).acquired);
    ASSERT_FALSE(waiter.acquire(keys, second, milliseconds(30000), &info, Queueing::wait).acquired);
    ASSERT_EQ(node.release(keys, h), ReleaseResult::released);

    EXPECT_EQ(raw({"GET", keys.key}), first);
    long long pttl = std::stoll(raw({"PTTL", keys.key}));
    EXPECT_GT(pttl, 1000);
    EXPECT_LE(pttl, 2000);
    long long fence = std::stoll(raw({"GET", keys.fence}));
    EXPECT_GT(fence, held.fence);
    EXPECT_EQ(raw({"LLEN", keys.wake_key(first)}), "1");
    EXPECT_EQ(raw({"LINDEX", keys.wake_key(first), "0"}), "handoff:" + std::to_string(fence));
    EXPECT_EQ(raw({"HGET", keys.info, "token"}), first);
    EXPECT_EQ(raw({"HGET", keys.info, "host"}), "waiter-host");
    EXPECT_EQ(raw({"HGET", keys.info, "ttl_ms"}), "30000");
    EXPECT_EQ(raw({"LLEN", keys.wait}), "1");
    EXPECT_EQ(raw({"LINDEX", keys.wait, "0"}), second);
    EXPECT_EQ(raw({"EXISTS", keys.wake_key(first) + ":alive"}), "0");
    EXPECT_EQ(raw({"EXISTS", keys.wake_key(first) + ":take"}), "0");
    EXPECT_EQ(raw({"LLEN", keys.wake_key(second)}), "1");
    EXPECT_EQ(raw({"LINDEX", keys.wake_key(second), "0"}), "1");
    // The new holder confirms (or renews): its own token, the fence it was handed, the TTL.
    AcquireResult mine = waiter.acquire(keys, first, milliseconds(30000), &info, Queueing::wait);
    ASSERT_TRUE(mine.acquired);
    EXPECT_EQ(mine.fence, fence);
    EXPECT_GT(std::stoll(raw({"PTTL", keys.key})), 2000);
    // The hand-off's wake-up, which this acquire came before (a re-sent acquire, a confirm),
    // goes with it rather than linger (ambiguous.bats found it left behind in a clean-clone CI).
    EXPECT_EQ(raw({"EXISTS", keys.wake_key(first)}), "0");
}

// A head that did not ask (an older waiter, --once-per, --min-replicas) is only woken, and a
// fence counter that is gone (a restart without persistence) leaves the take to the head's own
// acquire (the restart guard is its to apply).
TEST_F(Lock, AReleaseOnlyWakesAHeadThatDidNotAskOrWhenTheCounterIsGone) {
    for (bool asked : {false, true}) {
        raw("FLUSHALL");
        std::string h = new_token(), first = new_token();
        ASSERT_TRUE(node.acquire(keys, h, milliseconds(30000)).acquired);
        LockNode waiter{conn};
        if (asked) waiter.set_hand_off(milliseconds(2000));
        ASSERT_FALSE(
            waiter.acquire(keys, first, milliseconds(30000), nullptr, Queueing::wait).acquired);
        if (asked) raw({"DEL", keys.fence});
        ASSERT_EQ(node.release(keys, h), ReleaseResult::released);
        EXPECT_EQ(raw({"EXISTS", keys.key}), "0");
        EXPECT_EQ(raw({"LLEN", keys.wake_key(first)}), "1");
        EXPECT_EQ(raw({"LINDEX", keys.wake_key(first), "0"}), "1");
        EXPECT_EQ(raw({"LINDEX", keys.wait, "0"}), first);
    }
}

// Permits: a release hands the permit it frees to the waiter that permit admits, as that
// waiter's own acquire would take it (permits.lua's take_permit): its token on the freed permit
// for the claim window, the next fence (kept beside the permit), its holder info with the permit,
// the queue left; the wake-up names the fence and the permit. The next waiter looks again.
TEST_F(Lock, APermitReleaseHandsTheFreedPermitToTheWaiterItAdmits) {
    LockNode a{conn, 2}, b{conn, 2}, waiter{conn, 2};
    waiter.set_hand_off(milliseconds(2000));
    std::string ta = new_token(), tb = new_token(), first = new_token(), second = new_token();
    ASSERT_TRUE(a.acquire(keys, ta, milliseconds(30000)).acquired);
    AcquireResult hb = b.acquire(keys, tb, milliseconds(30000));
    ASSERT_TRUE(hb.acquired);
    HolderInfo info;
    info.host = "waiter-host";
    info.pid = 4242;
    ASSERT_FALSE(waiter.acquire(keys, first, milliseconds(30000), &info, Queueing::wait).acquired);
    ASSERT_FALSE(waiter.acquire(keys, second, milliseconds(30000), &info, Queueing::wait).acquired);
    EXPECT_EQ(raw({"LINDEX", keys.wake_key(first) + ":take", "1"}), "2000");
    ASSERT_EQ(b.release(keys, tb), ReleaseResult::released);

    std::string permit = permit_key_prefix(keys) + std::to_string(hb.permit);
    EXPECT_EQ(raw({"GET", permit}), first);
    long long pttl = std::stoll(raw({"PTTL", permit}));
    EXPECT_GT(pttl, 1000);
    EXPECT_LE(pttl, 2000);
    std::string fence = raw({"GET", keys.fence});
    EXPECT_GT(std::stoll(fence), hb.fence);
    EXPECT_EQ(raw({"GET", permit + ":fence"}), fence);
    EXPECT_EQ(raw({"LINDEX", keys.wake_key(first), "0"}),
              fmt::format("handoff:{}:{}", fence, hb.permit));
    EXPECT_EQ(raw({"HGET", permit + ":info", "token"}), first);
    EXPECT_EQ(raw({"HGET", permit + ":info", "host"}), "waiter-host");
    EXPECT_EQ(raw({"HGET", permit + ":info", "permit"}), std::to_string(hb.permit));
    EXPECT_EQ(raw({"HGET", permit + ":info", "ttl_ms"}), "30000");
    EXPECT_EQ(raw({"LLEN", keys.wait}), "1");
    EXPECT_EQ(raw({"EXISTS", keys.wake_key(first) + ":take"}), "0");
    EXPECT_EQ(raw({"LINDEX", keys.wake_key(second), "0"}), "1");
    // The new holder confirms: its own permit and the fence it was handed, the TTL.
    AcquireResult mine = waiter.acquire(keys, first, milliseconds(30000), &info, Queueing::wait);
    ASSERT_TRUE(mine.acquired);
    EXPECT_EQ(mine.fence, std::stoll(fence));
    EXPECT_EQ(mine.permit, hb.permit);
    EXPECT_GT(std::stoll(raw({"PTTL", permit})), 2000);
    EXPECT_EQ(raw({"EXISTS", keys.wake_key(first)}), "0");
}

// A finish that hands its permit on settles its own record only: the waiter it handed the permit
// to, a run with a ledger, stays named in the set of open runs (lib/open_runs.lua), which is
// what tells of it should it die without a trace. (settle_record took the permit's record name
// out of the set whoever's it was by then.)
TEST_F(Lock, APermitsFinishThatHandsThePermitOnLeavesTheNewHoldersOpenRun) {
    LockNode a{conn, 2}, b{conn, 2}, waiter{conn, 2};
    waiter.set_hand_off(milliseconds(2000));
    HolderInfo info;
    info.host = "h";
    info.ledger_size = 10;
    std::string ta = new_token(), tb = new_token(), w = new_token();
    ASSERT_TRUE(a.acquire(keys, ta, milliseconds(30000), &info).acquired);
    AcquireResult hb = b.acquire(keys, tb, milliseconds(30000), &info);
    ASSERT_TRUE(hb.acquired);
    ASSERT_FALSE(waiter.acquire(keys, w, milliseconds(30000), &info, Queueing::wait).acquired);
    RunRecord rec = slot_run(0);
    rec.slot.reset();
    FinishResult f = b.finish(keys, tb, milliseconds(0), rec);
    EXPECT_EQ(f.release, ReleaseResult::released);
    std::string record = permit_key_prefix(keys) + std::to_string(hb.permit) + ":info";
    EXPECT_EQ(raw({"HGET", record, "token"}), w);
    EXPECT_EQ(raw({"SISMEMBER", keys.open, record}), "1");
}

// Shared: a writer's release hands the free lock to the readers at the queue's head, a shared
// hold each (never the lock exclusive: a reader's take note is not a writer's), up to the next
// writer, who is told to look again; the last reader's release hands that writer the lock.
TEST_F(Lock, AWritersReleaseHandsReadersTheSharedHoldAndTheLastReadersTheWriterTheLock) {
    LockNode reader{conn, 1, true}, writer{conn};
    reader.set_hand_off(milliseconds(2000));
    writer.set_hand_off(milliseconds(2000));
    std::string h = new_token(), r = new_token(), w = new_token();
    AcquireResult held = node.acquire(keys, h, milliseconds(30000));
    ASSERT_TRUE(held.acquired);
    ASSERT_FALSE(reader.acquire(keys, r, milliseconds(30000), nullptr, Queueing::wait).acquired);
    HolderInfo info;
    info.host = "writer-host";
    ASSERT_FALSE(writer.acquire(keys, w, milliseconds(30000), &info, Queueing::wait).acquired);
    EXPECT_EQ(raw({"LINDEX", keys.wake_key(r) + ":take", "1"}), "shared:2000");
    ASSERT_EQ(node.release(keys, h), ReleaseResult::released);

    EXPECT_EQ(raw({"GET", keys.key}), shared_marker);
    EXPECT_LE(std::stoll(raw({"PTTL", keys.key})), 2000);
    std::string record = shared_record_prefix(keys) + r;
    std::string fence = raw({"HGET", record, "fence"});
    EXPECT_GT(std::stoll(fence), held.fence);
    EXPECT_EQ(raw({"HGET", record, "ttl_ms"}), "30000");
    EXPECT_NE(raw({"ZSCORE", shared_holders_key(keys), r}), "");
    EXPECT_EQ(raw({"LINDEX", keys.wake_key(r), "0"}), "handoff:" + fence);
    EXPECT_EQ(raw({"LINDEX", keys.wait, "0"}), w);
    EXPECT_EQ(raw({"LINDEX", keys.wake_key(w), "0"}), "1");

    raw({"DEL", keys.wake_key(w)});
    ASSERT_EQ(reader.release(keys, r), ReleaseResult::released);
    EXPECT_EQ(raw({"GET", keys.key}), w);
    EXPECT_LE(std::stoll(raw({"PTTL", keys.key})), 2000);
    std::string next = raw({"GET", keys.fence});
    EXPECT_GT(std::stoll(next), std::stoll(fence));
    EXPECT_EQ(raw({"LINDEX", keys.wake_key(w), "0"}), "handoff:" + next);
    EXPECT_EQ(raw({"HGET", keys.info, "token"}), w);
    EXPECT_EQ(raw({"HGET", keys.info, "host"}), "writer-host");
    EXPECT_EQ(raw({"LLEN", keys.wait}), "0");
}

// A busy reply to a waiter that asks for the hand-off empties its wake-up list: a hand-off left
// there (its claim lapsed and the lock went on) must not be taken for a fresh one (waiter.cpp
// counts the lease from this reply).
TEST_F(Lock, ABusyReplyToAHandOffWaiterDropsAStaleWakeUp) {
    std::string h = new_token(), w = new_token();
    ASSERT_TRUE(node.acquire(keys, h, milliseconds(30000)).acquired);
    raw({"RPUSH", keys.wake_key(w), "handoff:12345"});
    LockNode waiter{conn};
    waiter.set_hand_off(milliseconds(2000));
    ASSERT_FALSE(waiter.acquire(keys, w, milliseconds(30000), nullptr, Queueing::wait).acquired);
    EXPECT_EQ(raw({"EXISTS", keys.wake_key(w)}), "0");
}

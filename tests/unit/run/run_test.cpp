// The run's supervisor against a fake backend (fake_backend.hpp) and real short commands: what it
// asks of the lock and when (renewals at --renew-every, one release with the run's token after
// the command ended), and what it does to the command when the lock is lost or time runs out.
// The end-to-end files prove the same against real Redis; these prove the logic alone, fast.
#include "run/run.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "fake_backend.hpp"
#include "util/errors.hpp"
#include "util/exit_codes.hpp"

namespace redlock {
namespace {

using fake::Call;
using fake::Renew;
using namespace std::chrono_literals;

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Whether process `pid` has ended: gone, or a zombie waiting to be reaped.
bool has_exited(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) return true;
    std::string line;
    std::getline(stat, line);
    std::size_t paren = line.rfind(')');
    return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

class RunTest : public ::testing::Test {
  protected:
    void SetUp() override {
        // The run blocks the signals it forwards and never unblocks them (a signal pending at
        // exit must not kill redlock-run); here the next test's command would inherit that.
        pthread_sigmask(SIG_SETMASK, nullptr, &mask_);
        char tmpl[] = "/tmp/redlock-run-test.XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
        opt_.name = lock_.keys().name;
        opt_.ttl = Millis(5000);
        opt_.renew_every = Millis(1000);
        opt_.kill_after = Millis(10'000);
    }
    void TearDown() override {
        pthread_sigmask(SIG_SETMASK, &mask_, nullptr);
        std::filesystem::remove_all(dir_);
    }
    std::string file(const std::string& name) const { return dir_ + "/" + name; }
    int run(std::vector<std::string> command) {
        opt_.command = std::move(command);
        return run_command(opt_, lock_);
    }
    // The one call that gave the lock back (release or finish); fails the test unless exactly
    // one did.
    Call giveback() const {
        std::vector<Call> g = lock_.givebacks();
        EXPECT_EQ(g.size(), 1u);
        return g.empty() ? Call{} : g.front();
    }

    fake::Backend lock_;
    RunOptions opt_;
    std::string dir_;
    sigset_t mask_{};
};

TEST_F(RunTest, ReturnsTheCommandsStatusAndGivesTheLockBackOnceWithItsTokenAfterItExited) {
    std::string pid_file = file("pid"), token_file = file("token");
    std::optional<bool> exited_at_giveback;
    lock_.on_call([&](const Call& c) {
        if (c.kind == Call::Kind::finish || c.kind == Call::Kind::release)
            exited_at_giveback = has_exited(std::stoi(read_file(pid_file)));
    });
    int rc = run({"sh", "-c", "echo $$ > \"$0\"; printf %s \"$REDLOCK_TOKEN\" > \"$1\"; exit 3",
                  pid_file, token_file});
    EXPECT_EQ(rc, 3);
    std::vector<Call> acquires = lock_.calls(Call::Kind::acquire);
    ASSERT_EQ(acquires.size(), 1u);
    EXPECT_EQ(acquires[0].ttl, opt_.ttl);
    EXPECT_EQ(acquires[0].wait, Millis(0));
    std::string token = acquires[0].token;
    EXPECT_FALSE(token.empty());
    EXPECT_EQ(read_file(token_file), token);  // the command was told the run's token

    Call g = giveback();  // with the default ledger: finish, the record and release in one
    EXPECT_EQ(g.kind, Call::Kind::finish);
    EXPECT_EQ(g.token, token);
    EXPECT_EQ(g.keep, Millis(0));
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->outcome, Outcome::ran);
    EXPECT_EQ(g.record->entry.exit_status, 3);
    EXPECT_EQ(g.record->entry.fence, lock_.fence());
    ASSERT_TRUE(exited_at_giveback);
    EXPECT_TRUE(*exited_at_giveback) << "the lock was given back while the command ran";
    EXPECT_TRUE(lock_.calls(Call::Kind::renew).empty());  // over before the first was due
}

TEST_F(RunTest, WithoutALedgerTheReleaseAloneIsCalledOnce) {
    opt_.job.ledger_size = 0;
    EXPECT_EQ(run({"true"}), 0);
    Call g = giveback();
    EXPECT_EQ(g.kind, Call::Kind::release);
    EXPECT_EQ(g.token, lock_.calls(Call::Kind::acquire).at(0).token);
    EXPECT_EQ(g.keep, Millis(0));
}

// The release is the last word on whether the command ran under the lock: found gone there,
// the run says so (76) even though the command itself succeeded.
TEST_F(RunTest, AReleaseThatFindsTheLockGoneExits76) {
    lock_.set_release(Release::Outcome::lost, "was no longer held by this run");
    testing::internal::CaptureStderr();
    int rc = run({"true"});
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, exit_code::lock_lost);
    EXPECT_NE(err.find("was no longer held by this run"), std::string::npos) << err;
    EXPECT_EQ(giveback().kind, Call::Kind::finish);
}

// A release that could not be sent leaves the lock to expire; the command's status stands.
TEST_F(RunTest, AReleaseThatCannotBeSentKeepsTheCommandsStatus) {
    lock_.set_release(Release::Outcome::unknown, "fake: connection reset");
    testing::internal::CaptureStderr();
    int rc = run({"sh", "-c", "exit 5"});
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, 5);
    EXPECT_NE(err.find("could not release lock"), std::string::npos) << err;
    EXPECT_NE(err.find("expires by itself within 5s"), std::string::npos) << err;
    giveback();
}

TEST_F(RunTest, ABusyLockExitsWithTheConflictCodeWithoutStartingTheCommand) {
    lock_.set_acquire(fake::Acquire::busy);
    opt_.conflict_exit_code = 42;
    testing::internal::CaptureStderr();
    int rc = run({"touch", file("ran")});
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, 42);
    EXPECT_FALSE(std::filesystem::exists(file("ran")));
    EXPECT_NE(err.find("is held by the fake; not running the command"), std::string::npos) << err;
    EXPECT_EQ(lock_.calls(Call::Kind::acquire).size(), 1u);
    EXPECT_TRUE(lock_.givebacks().empty());  // nothing to give back
    EXPECT_TRUE(lock_.calls(Call::Kind::renew).empty());
    EXPECT_TRUE(lock_.calls(Call::Kind::record_run).empty());  // busy runs: only --ledger-busy
}

TEST_F(RunTest, ADoneSlotExitsWithTheConflictCodeWithoutStartingTheCommand) {
    lock_.set_acquire(fake::Acquire::slot_done);
    opt_.job.once_per = OncePer{Millis(3'600'000), Millis(0), false};
    opt_.conflict_exit_code = 42;
    testing::internal::CaptureStderr();
    int rc = run({"touch", file("ran")});
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, 42);
    EXPECT_FALSE(std::filesystem::exists(file("ran")));
    EXPECT_NE(err.find("was already done on elsewhere"), std::string::npos) << err;
    EXPECT_TRUE(lock_.givebacks().empty());
}

TEST_F(RunTest, AnAcquireThatCannotDecideThrowsWithoutStartingTheCommand) {
    lock_.set_acquire(fake::Acquire::unavailable);
    EXPECT_THROW(run({"touch", file("ran")}), RedisUnavailable);
    EXPECT_FALSE(std::filesystem::exists(file("ran")));
    EXPECT_TRUE(lock_.givebacks().empty());
}

TEST_F(RunTest, RenewsAtTheIntervalWhileTheCommandRunsAndNeverAfterTheRelease) {
    opt_.ttl = Millis(2000);
    opt_.renew_every = Millis(100);
    // Ten renewal periods, so that a renewer thread scheduled late on a loaded machine (under
    // ThreadSanitizer) still renews at least twice.
    EXPECT_EQ(run({"sleep", "1"}), 0);
    std::vector<Call> renews = lock_.calls(Call::Kind::renew);
    Call g = giveback();
    ASSERT_GE(renews.size(), 2u);
    Deadline acquired = lock_.calls(Call::Kind::acquire).at(0).at;
    // With the lease far off, a renewal's deadline is its send time plus renew_timeout(): the
    // deadlines are spaced as the sends are.
    EXPECT_GE(renews[0].deadline - lock_.renew_timeout(), acquired + opt_.renew_every);
    for (std::size_t i = 0; i < renews.size(); ++i) {
        EXPECT_EQ(renews[i].token, g.token);
        EXPECT_EQ(renews[i].ttl, opt_.ttl);
        EXPECT_EQ(renews[i].result, "renewed");
        EXPECT_LT(renews[i].at, g.at) << "renewed after the release";
        if (i > 0) {
            EXPECT_GE(renews[i].deadline - renews[i - 1].deadline, opt_.renew_every);
        }
    }
    std::this_thread::sleep_for(200ms);  // two intervals
    EXPECT_EQ(lock_.calls(Call::Kind::renew).size(), renews.size()) << "the renewer outlived run";
}

// sh ignores nothing here: it notes the TERM and goes on, so only the SIGKILL ends it.
const char* const term_noting_loop =
    "trap 'echo TERM >> \"$0\"' TERM; while :; do sleep 0.02; done";

TEST_F(RunTest, ARenewalAnsweredNotOwnerStopsTheCommandWithTermThenKillAndExits76) {
    opt_.renew_every = Millis(100);
    opt_.kill_after = Millis(300);
    lock_.script_renewals({{Renew::not_owner}});
    testing::internal::CaptureStderr();
    int rc = run({"sh", "-c", term_noting_loop, file("signals")});
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, exit_code::lock_lost);
    EXPECT_EQ(read_file(file("signals")), "TERM\n");
    std::vector<Call> renews = lock_.calls(Call::Kind::renew);
    ASSERT_EQ(renews.size(), 1u);  // never renewed again after "not ours"
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->entry.signal, SIGKILL);
    EXPECT_EQ(g.record->outcome, Outcome::lost);
    // The SIGKILL waited --kill-after from the loss, which the renewal's answer reported.
    EXPECT_GE(g.at - renews[0].at, opt_.kill_after);
    EXPECT_NE(err.find("no longer holds this run's token; sending SIGTERM"), std::string::npos)
        << err;
    EXPECT_NE(err.find("still running after SIGTERM; sending SIGKILL"), std::string::npos) << err;
}

// Renewals that never get an answer leave the lease to run out: the run must warn the command
// (SIGTERM) while the lease still holds, term_lead before its end, and kill it by the end however
// long --kill-after is, since after that Redis may give the lock to someone else.
TEST_F(RunTest, RenewalsFailingUntilTheLeaseMarginStopTheCommandBeforeTheLeaseEnds) {
    // A lease of 30 renewal periods: with 6 (600 ms), a ThreadSanitizer build on a loaded machine
    // once got the renewer thread scheduled only once before the margin.
    opt_.ttl = Millis(3000);
    opt_.renew_every = Millis(100);
    opt_.kill_after = Millis(10'000);
    lock_.script_renewals({}, {Renew::unavailable});
    testing::internal::CaptureStderr();
    int rc = run({"sh", "-c", term_noting_loop, file("signals")});
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, exit_code::lock_lost);
    std::vector<Call> renews = lock_.calls(Call::Kind::renew);
    EXPECT_GE(renews.size(), 2u);  // retried, not given up on the first failure
    for (const Call& r : renews) EXPECT_EQ(r.result, "unavailable");
    EXPECT_EQ(read_file(file("signals")), "TERM\n");  // warned first
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->entry.signal, SIGKILL);  // then killed: by the lease end, not 10s later
    EXPECT_LT(g.at - lock_.calls(Call::Kind::acquire).at(0).at, opt_.kill_after);
    EXPECT_NE(err.find("no renewal succeeded in time and the lease ends in"), std::string::npos)
        << err;
    EXPECT_NE(err.find("(last renewal error: fake: Redis is restarting)"), std::string::npos)
        << err;
}

TEST_F(RunTest, RenewalsThatFailOnlyForAWhileKeepTheCommandRunning) {
    opt_.ttl = Millis(3000);
    opt_.renew_every = Millis(100);
    lock_.script_renewals({{Renew::unavailable}, {Renew::unavailable}}, {Renew::renewed});
    // Longer than the lease the acquire alone gave (stopped at about half the ttl without a
    // renewal; the third renewal, the first to succeed, is sent at about 200ms, with a second
    // and more to spare for a renewer thread scheduled late on a loaded machine): only the
    // renewals that did succeed keep it running.
    EXPECT_EQ(run({"sleep", "2"}), 0);
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->outcome, Outcome::ran);
    EXPECT_EQ(g.record->entry.exit_status, 0);
}

TEST_F(RunTest, MinHoldAsksTheReleaseToKeepTheRest) {
    opt_.min_hold = Millis(10'000);
    EXPECT_EQ(run({"true"}), 0);
    Call g = giveback();
    EXPECT_GT(g.keep, Millis(5'000));
    EXPECT_LE(g.keep, Millis(10'000));
}

TEST_F(RunTest, MaxRuntimeStopsTheCommandAndExits124) {
    opt_.max_runtime = Millis(200);
    testing::internal::CaptureStderr();
    int rc = run({"sleep", "5"});
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, exit_code::max_runtime);
    EXPECT_NE(err.find("ran longer than --max-runtime 200ms; sending SIGTERM"), std::string::npos)
        << err;
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->outcome, Outcome::timed_out);
    EXPECT_EQ(g.record->entry.signal, SIGTERM);
    EXPECT_GE(g.at - lock_.calls(Call::Kind::acquire).at(0).at, *opt_.max_runtime);
}

}  // namespace
}  // namespace redlock

// The run's supervisor against a fake backend (fake_backend.hpp) and real short commands: what it
// asks of the lock and when (renewals at --renew-every, one release with the run's token after
// the command ended), and what it does to the command when the lock is lost or time runs out.
// The end-to-end files prove the same against real Redis; these prove the logic alone, fast.
#include "run/run.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "../fake_clock.hpp"
#include "fake_backend.hpp"
#include "run/ping.hpp"
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

// --ping over a fake pinger that records what it is asked for and answers as told.
class RecordingPinger : public Pinger {
  public:
    explicit RecordingPinger(long status) : status_(status) {}
    Result get(const std::string& url, Millis, const std::atomic<bool>&) override {
        std::lock_guard<std::mutex> g(mutex_);
        urls_.push_back(url);
        return {status_, status_ == 0 ? "Couldn't connect to server" : ""};
    }
    std::vector<std::string> urls() {
        std::lock_guard<std::mutex> g(mutex_);
        return urls_;
    }

  private:
    long status_;
    std::mutex mutex_;
    std::vector<std::string> urls_;
};

TEST_F(RunTest, PingSendsStartAndTheRunsExitStatusAndAPingThatFailsChangesNothing) {
    opt_.job.ping_url = "http://h/check";
    for (long service : {200L, 0L}) {
        RecordingPinger pinger(service);
        opt_.command = {"sh", "-c", "exit 3"};
        testing::internal::CaptureStderr();
        int rc = run_command(opt_, lock_, boot_clock(), &pinger);
        std::string err = testing::internal::GetCapturedStderr();
        EXPECT_EQ(rc, 3) << service;
        std::vector<std::string> urls = pinger.urls();
        ASSERT_FALSE(urls.empty());
        EXPECT_EQ(urls.front(), "http://h/check/start");
        EXPECT_EQ(urls.back(), "http://h/check/3");
        if (service == 0)
            EXPECT_NE(err.find("could not send the failure ping for lock"), std::string::npos)
                << err;
        else
            EXPECT_EQ(err, "");
    }
}

TEST_F(RunTest, PingSendsNothingForABusyLockOrADoneSlot) {
    opt_.job.ping_url = "http://h/check";
    opt_.job.once_per = OncePer{Millis(3'600'000), Millis(0), false};
    for (fake::Acquire taken : {fake::Acquire::busy, fake::Acquire::slot_done}) {
        RecordingPinger pinger(200);
        lock_.set_acquire(taken);
        opt_.command = {"true"};
        testing::internal::CaptureStderr();
        EXPECT_EQ(run_command(opt_, lock_, boot_clock(), &pinger), opt_.conflict_exit_code);
        testing::internal::GetCapturedStderr();
        EXPECT_TRUE(pinger.urls().empty());
    }
}

TEST_F(RunTest, PingReportsACommandThatCannotStartAsAFailureWithoutAStart) {
    opt_.job.ping_url = "http://h/check";
    RecordingPinger pinger(200);
    opt_.command = {file("no-such-command")};
    testing::internal::CaptureStderr();
    EXPECT_THROW(run_command(opt_, lock_, boot_clock(), &pinger), SpawnError);
    testing::internal::GetCapturedStderr();
    EXPECT_EQ(pinger.urls(), std::vector<std::string>{"http://h/check/127"});
}

TEST_F(RunTest, AnAcquireThatCannotDecideThrowsWithoutStartingTheCommand) {
    lock_.set_acquire(fake::Acquire::unavailable);
    EXPECT_THROW(run({"touch", file("ran")}), RedisUnavailable);
    EXPECT_FALSE(std::filesystem::exists(file("ran")));
    EXPECT_TRUE(lock_.givebacks().empty());
}

// An acquire answered so late that the command would have to be stopped at once: not started,
// 69, and the release that finds the lock already expired does not claim that the command ran
// without the lock (it never ran).
TEST_F(RunTest, AnAcquireAnsweredTooLateNeverSaysTheCommandRanWithoutTheLock) {
    for (Release::Outcome gone : {Release::Outcome::released, Release::Outcome::lost}) {
        lock_.set_acquire_took(opt_.ttl);
        lock_.set_release(gone, "was gone at release: the command ran without it for a while");
        testing::internal::CaptureStderr();
        EXPECT_THROW(
            try {
                run({"touch", file("ran")});
            } catch (const RedisUnavailable& e) {
                std::string what = e.what();
                EXPECT_NE(what.find("acquired too late"), std::string::npos) << what;
                EXPECT_NE(what.find(gone == Release::Outcome::lost ? "had already expired"
                                                                   : "without running the command"),
                          std::string::npos)
                    << what;
                EXPECT_EQ(what.find("ran without"), std::string::npos) << what;
                throw;
            },
            RedisUnavailable);
        std::string err = testing::internal::GetCapturedStderr();
        EXPECT_EQ(err.find("ran without"), std::string::npos) << err;
        EXPECT_EQ(err.find("lost"), std::string::npos) << err;
        EXPECT_FALSE(std::filesystem::exists(file("ran")));
    }
}

// On the real clock, the one test that watches the command itself receive the SIGTERM (the
// decisions' timing is proved on virtual time below). sh ignores nothing here: it notes the TERM
// and goes on, so only the SIGKILL ends it.
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

TEST_F(RunTest, MinHoldAsksTheReleaseToKeepTheRest) {
    opt_.min_hold = Millis(10'000);
    EXPECT_EQ(run({"true"}), 0);
    Call g = giveback();
    EXPECT_GT(g.keep, Millis(5'000));
    EXPECT_LE(g.keep, Millis(10'000));
}

// The supervisor's deadlines on virtual time (fake_clock.hpp): time jumps from one decision to
// the next, so each test states exactly when (in virtual time) the run sent its signals and gave
// the lock back, in microseconds of real time, and no loaded machine can make a decision late.
// The commands are real; they ignore SIGTERM, so that only the SIGKILL ends them and the outcome
// does not depend on how fast they die.
class VirtualRunTest : public RunTest {
  protected:
    void SetUp() override {
        RunTest::SetUp();
        lock_.set_clock(clock_);
        // The command inherits an ignored SIGTERM from its first instruction on (a trap it set
        // itself could come after the SIGTERM: virtual time does not wait for a shell to start).
        struct sigaction ignore {};
        ignore.sa_handler = SIG_IGN;
        sigaction(SIGTERM, &ignore, &term_);
    }
    void TearDown() override {
        sigaction(SIGTERM, &term_, nullptr);
        RunTest::TearDown();
    }
    int run(std::vector<std::string> command) {
        opt_.command = std::move(command);
        return run_command(opt_, lock_, clock_);
    }
    Deadline acquired() const { return lock_.calls(Call::Kind::acquire).at(0).at; }

    fake::Clock clock_;  // the test's thread runs the supervisor: one user to start with
    struct sigaction term_ {};
};

const std::vector<std::string> term_ignoring_command = {"sleep", "600"};

// A command that ends with `status` once `file` exists (a fake backend's hook creates it at a
// chosen renewal, so the command ends at a chosen virtual moment).
std::vector<std::string> until_exists(const std::string& file, int status = 0) {
    return {"sh", "-c",
            "while [ ! -e \"$0\" ]; do sleep 0.01; done; exit " + std::to_string(status), file};
}

// Creates `file` when the backend receives its `n`th renewal.
std::function<void(const Call&)> create_at_renewal(std::string file, int n) {
    auto count = std::make_shared<std::atomic<int>>(0);
    return [file = std::move(file), n, count](const Call& c) {
        if (c.kind == Call::Kind::renew && ++*count == n) std::ofstream(file.c_str()) << "";
    };
}

// Renewals every --renew-every from the acquire, to the millisecond, all of them before the lock
// is given back; the command ends by itself (a file the fifth renewal creates) with status 0.
TEST_F(VirtualRunTest, RenewsAtTheIntervalWhileTheCommandRunsAndNeverAfterTheRelease) {
    opt_.ttl = Millis(2000);
    opt_.renew_every = Millis(100);
    std::string done = file("done");
    std::atomic<int> renewals{0};
    std::atomic<bool> given_back{false}, renewed_after{false};
    lock_.on_call([&](const Call& c) {
        if (c.kind == Call::Kind::release || c.kind == Call::Kind::finish) given_back = true;
        if (c.kind != Call::Kind::renew) return;
        if (given_back) renewed_after = true;
        if (++renewals == 5) std::ofstream(done.c_str()) << "";
    });
    clock_.stop_at(clock_.now() + Millis(500));  // until the command has seen the file
    EXPECT_EQ(run(until_exists(done)), 0);
    std::vector<Call> renews = lock_.calls(Call::Kind::renew);
    Call g = giveback();
    ASSERT_EQ(renews.size(), 5u);
    EXPECT_EQ(g.at, acquired() + Millis(500));
    EXPECT_FALSE(renewed_after) << "renewed after the release";
    for (std::size_t i = 0; i < renews.size(); ++i) {
        EXPECT_EQ(renews[i].token, g.token);
        EXPECT_EQ(renews[i].ttl, opt_.ttl);
        EXPECT_EQ(renews[i].result, "renewed");
        EXPECT_EQ(renews[i].at, acquired() + opt_.renew_every * static_cast<int>(i + 1)) << i;
    }
}

TEST_F(VirtualRunTest, RenewalsFailingUntilTheLeaseMarginStopTheCommandBeforeTheLeaseEnds) {
    opt_.ttl = Millis(3000);
    opt_.renew_every = Millis(100);
    opt_.kill_after = Millis(10'000);
    lock_.script_renewals({}, {Renew::unavailable});
    testing::internal::CaptureStderr();
    int rc = run(term_ignoring_command);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, exit_code::lock_lost);
    std::vector<Call> renews = lock_.calls(Call::Kind::renew);
    EXPECT_GE(renews.size(), 2u);  // retried, not given up on the first failure
    for (const Call& r : renews) EXPECT_EQ(r.result, "unavailable");
    // The lease the acquire gave, less the watchdog's lead (min(50ms, ttl/20)): the SIGKILL lands
    // there exactly, never after, however long --kill-after is; the SIGTERM came term_lead
    // (min(kill_after, (ttl - every) / 2) = 1450ms) before it.
    Deadline lease_end = lock_.lease_end(acquired(), opt_.ttl) - Millis(50);
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->entry.signal, SIGKILL);
    EXPECT_EQ(g.record->outcome, Outcome::lost);
    EXPECT_EQ(g.at, lease_end);
    for (const Call& r : renews)
        EXPECT_LE(r.at, lease_end - Millis(1450)) << "renewed after SIGTERM";
    EXPECT_NE(err.find("no renewal succeeded in time and the lease ends in 1.450s"),
              std::string::npos)
        << err;
    EXPECT_NE(err.find("sending SIGTERM to the command (SIGKILL in 1.450s)"), std::string::npos)
        << err;
    EXPECT_NE(err.find("(last renewal error: fake: Redis is restarting)"), std::string::npos)
        << err;
    EXPECT_NE(err.find("still running after SIGTERM; sending SIGKILL"), std::string::npos) << err;
}

TEST_F(VirtualRunTest, ARenewalAnsweredNotOwnerStopsTheCommandWithTermThenKillAfterKillAfter) {
    opt_.renew_every = Millis(100);
    opt_.kill_after = Millis(300);
    lock_.script_renewals({{Renew::not_owner}});
    testing::internal::CaptureStderr();
    int rc = run(term_ignoring_command);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, exit_code::lock_lost);
    std::vector<Call> renews = lock_.calls(Call::Kind::renew);
    ASSERT_EQ(renews.size(), 1u);  // never renewed again after "not ours"
    EXPECT_EQ(renews[0].at, acquired() + opt_.renew_every);
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->entry.signal, SIGKILL);
    EXPECT_EQ(g.at, renews[0].at + opt_.kill_after);  // SIGKILL --kill-after from the loss
    EXPECT_NE(err.find("no longer holds this run's token; sending SIGTERM"), std::string::npos)
        << err;
}

TEST_F(VirtualRunTest, MaxRuntimeSendsTermThenKillAfterKillAfterAndExits124) {
    opt_.max_runtime = Millis(200);
    opt_.kill_after = Millis(10'000);  // twice the ttl: the renewals go on meanwhile
    clock_.stop_at(clock_.now() + Millis(10'200));
    testing::internal::CaptureStderr();
    int rc = run(term_ignoring_command);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, exit_code::max_runtime);
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->outcome, Outcome::timed_out);
    EXPECT_EQ(g.record->entry.signal, SIGKILL);
    EXPECT_EQ(g.at, acquired() + Millis(200) + Millis(10'000));
    // Renewed once a second all along (ttl 5s): the lock stayed ours while the command took
    // its time to stop.
    std::vector<Call> renews = lock_.calls(Call::Kind::renew);
    ASSERT_EQ(renews.size(), 10u);
    for (std::size_t i = 0; i < renews.size(); ++i) {
        EXPECT_EQ(renews[i].at, acquired() + opt_.renew_every * static_cast<int>(i + 1));
        EXPECT_EQ(renews[i].result, "renewed");
    }
    EXPECT_NE(err.find("ran longer than --max-runtime 200ms; sending SIGTERM (SIGKILL after 10s)"),
              std::string::npos)
        << err;
}

TEST_F(VirtualRunTest, MaxRenewalsStopsTheCommandWhenTheNextRenewalWouldBeDue) {
    opt_.renew_every = Millis(1000);
    opt_.kill_after = Millis(500);
    opt_.job.max_renewals = 3;
    clock_.stop_at(clock_.now() + Millis(4500));
    testing::internal::CaptureStderr();
    int rc = run(term_ignoring_command);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, exit_code::stuck);
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->outcome, Outcome::stuck);
    // Stuck when the fourth renewal would be due (4s), killed --kill-after later.
    EXPECT_EQ(g.at, acquired() + Millis(4000) + Millis(500));
    EXPECT_NE(err.find("is stuck"), std::string::npos) << err;
}

// A command that outlives the lease the acquire alone gave, because renewals that failed for a
// while then succeeded kept extending it: it is never stopped. It ends (by a file the fake
// backend's 40th renewal creates, 4s into a 3s ttl) on its own, with status 0.
TEST_F(VirtualRunTest, RenewalsThatFailOnlyForAWhileKeepTheCommandRunningPastTheFirstLease) {
    opt_.ttl = Millis(3000);
    opt_.renew_every = Millis(100);
    lock_.script_renewals({{Renew::unavailable}, {Renew::unavailable}}, {Renew::renewed});
    std::string done = file("done");
    lock_.on_call(create_at_renewal(done, 40));
    EXPECT_EQ(run(until_exists(done)), 0);
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->outcome, Outcome::ran);
    EXPECT_EQ(g.record->entry.exit_status, 0);
    EXPECT_GT(g.at, lock_.lease_end(acquired(), opt_.ttl));
}

TEST_F(VirtualRunTest, OnLostKillKillsTheCommandAtTheLossAndExits76) {
    opt_.renew_every = Millis(100);
    opt_.on_lost = OnLost::kill;
    lock_.script_renewals({{Renew::not_owner}});
    testing::internal::CaptureStderr();
    int rc = run(term_ignoring_command);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, exit_code::lock_lost);
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->entry.signal, SIGKILL);
    EXPECT_EQ(g.at, acquired() + Millis(100));  // no SIGTERM, no --kill-after
    EXPECT_NE(err.find("no longer holds this run's token; sending SIGKILL to the command"),
              std::string::npos)
        << err;
    EXPECT_EQ(err.find("SIGTERM"), std::string::npos) << err;
}

// --on-lost ignore: the loss is reported, the command is left to finish (here: by itself, with
// status 0, once the supervisor has taken in the loss and stopped the renewer), and the run still
// exits 76, since the command may have overlapped another holder.
TEST_F(VirtualRunTest, OnLostIgnoreLetsTheCommandFinishAndStillExits76) {
    opt_.renew_every = Millis(100);
    opt_.on_lost = OnLost::ignore;
    lock_.script_renewals({{Renew::not_owner}});
    std::string done = file("done");
    lock_.on_call([done](const Call& c) {
        if (c.kind == Call::Kind::cancel_fd && c.result == "cleared")
            std::ofstream(done.c_str()) << "";
    });
    testing::internal::CaptureStderr();
    int rc = run(until_exists(done));
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, exit_code::lock_lost);
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->outcome, Outcome::lost);
    EXPECT_EQ(g.record->entry.exit_status, 0);
    EXPECT_FALSE(g.record->entry.signal);
    EXPECT_NE(err.find("the command keeps running (--on-lost ignore)"), std::string::npos) << err;
    EXPECT_EQ(lock_.calls(Call::Kind::renew).size(), 1u);
}

// A lost lock outranks --max-runtime: lost (and ignored) at 100ms, the command then outlives
// --max-runtime and is stopped for that, and the run exits 76, not 124.
TEST_F(VirtualRunTest, ALockLostBeforeMaxRuntimeFiresStillExits76) {
    opt_.renew_every = Millis(100);
    opt_.on_lost = OnLost::ignore;
    opt_.max_runtime = Millis(1500);
    opt_.kill_after = Millis(300);
    lock_.script_renewals({{Renew::not_owner}});
    testing::internal::CaptureStderr();
    int rc = run(term_ignoring_command);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, exit_code::lock_lost);
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->outcome, Outcome::lost);
    EXPECT_EQ(g.at, acquired() + Millis(1500) + Millis(300));
    EXPECT_NE(err.find("ran longer than --max-runtime 1.500s"), std::string::npos) << err;
}

TEST_F(VirtualRunTest, ACommandThatEndsWithinMaxRuntimeKeepsItsOwnStatus) {
    opt_.max_runtime = Millis(30'000);
    std::string done = file("done");
    lock_.on_call(create_at_renewal(done, 2));  // ends 2s in
    clock_.stop_at(clock_.now() + Millis(2000));
    EXPECT_EQ(run(until_exists(done, 3)), 3);
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->outcome, Outcome::ran);
    EXPECT_EQ(g.record->entry.exit_status, 3);
}

// --heartbeat-timeout: a heartbeat file never touched after the start stops the command as stuck
// when the timeout has passed since the start, exactly; SIGKILL --kill-after later (the command
// ignores SIGTERM); exit 79, recorded as stuck.
TEST_F(VirtualRunTest, AHeartbeatFileNotTouchedForTheTimeoutStopsTheCommandAsStuck) {
    opt_.job.heartbeat_file = file("beat");
    std::ofstream(opt_.job.heartbeat_file.c_str()) << "";
    opt_.job.heartbeat_timeout = Millis(300);
    opt_.kill_after = Millis(200);
    clock_.stop_at(clock_.now() + Millis(500));
    testing::internal::CaptureStderr();
    int rc = run(term_ignoring_command);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, exit_code::stuck);
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->outcome, Outcome::stuck);
    EXPECT_EQ(g.record->entry.signal, SIGKILL);
    EXPECT_EQ(g.at, acquired() + Millis(300) + Millis(200));
    EXPECT_NE(err.find("has not been touched for 300ms (--heartbeat-timeout); sending SIGTERM "
                       "(SIGKILL after 200ms)"),
              std::string::npos)
        << err;
}

// A heartbeat file touched between every two checks keeps the command running far past the
// timeout (here each renewal touches it, every 100ms, with a 300ms timeout), until it ends by
// itself 3s in.
TEST_F(VirtualRunTest, AHeartbeatFileTouchedInTimeKeepsTheCommandRunning) {
    std::string beat = file("beat");
    std::ofstream(beat.c_str()) << "";
    opt_.job.heartbeat_file = beat;
    opt_.job.heartbeat_timeout = Millis(300);
    opt_.renew_every = Millis(100);
    std::string done = file("done");
    auto count = std::make_shared<std::atomic<long>>(0);
    lock_.on_call([beat, done, count](const Call& c) {
        if (c.kind != Call::Kind::renew) return;
        // A new mtime each time, whatever the file system's timestamp granularity.
        long n = ++*count;
        timespec times[2] = {{n, 0}, {n, 0}};
        utimensat(AT_FDCWD, beat.c_str(), times, 0);
        if (n == 30) std::ofstream(done.c_str()) << "";
    });
    clock_.stop_at(clock_.now() + Millis(3000));
    EXPECT_EQ(run(until_exists(done)), 0);
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->outcome, Outcome::ran);
    EXPECT_EQ(g.at, acquired() + Millis(3000));
}

TEST_F(VirtualRunTest, ARunThatEndsBeforeMaxRenewalsIsNotStuck) {
    opt_.renew_every = Millis(250);
    opt_.job.max_renewals = 20;
    std::string done = file("done");
    lock_.on_call(create_at_renewal(done, 5));
    clock_.stop_at(clock_.now() + Millis(1250));
    EXPECT_EQ(run(until_exists(done)), 0);
    Call g = giveback();
    ASSERT_TRUE(g.record);
    EXPECT_EQ(g.record->outcome, Outcome::ran);
}

}  // namespace
}  // namespace redlock

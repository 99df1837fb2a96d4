// The hand-over after redlock-run died (run/handover.hpp): the state it reads from its sealed
// file, its wait for the command's group, and what it asks of the lock.
#include "run/handover.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <thread>

#include "fake_backend.hpp"
#include "util/errors.hpp"

using namespace redlock;

namespace {

HandoverState sample_state() {
    HandoverState s;
    s.argv = {"redlock-run", "-t", "60s", "job", "--", "sh", "-c", "a:b\nc"};
    s.env = {"REDLOCK_URL=redis://:pw@h:1", "ODD=tab\there", std::string("NUL=a\0b", 7)};
    s.token = "0123456789abcdef";
    s.fence = 42;
    s.supervisor_pid = 4242;
    s.acquired_boot_ns = 123'456'789;
    s.started_unix_ms = 1'700'000'000'000;
    s.slot = -3;
    return s;
}

// A child in a process group of its own that sleeps until killed; its pid is the group's id.
pid_t sleeping_group() {
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        for (;;) pause();
    }
    setpgid(pid, pid);
    return pid;
}

}  // namespace

TEST(Handover, StateRoundTripsAnyBytes) {
    HandoverState s = sample_state();
    HandoverState back = decode_handover(encode_handover(s));
    EXPECT_EQ(back.argv, s.argv);
    EXPECT_EQ(back.env, s.env);
    EXPECT_EQ(back.token, s.token);
    EXPECT_EQ(back.fence, 42);
    EXPECT_EQ(back.supervisor_pid, 4242);
    EXPECT_EQ(back.acquired_boot_ns, 123'456'789);
    EXPECT_EQ(back.started_unix_ms, 1'700'000'000'000);
    EXPECT_EQ(back.slot, -3);
    s.slot.reset();
    EXPECT_FALSE(decode_handover(encode_handover(s)).slot);
}

TEST(Handover, StateThatWasNotWrittenByUsIsRefused) {
    std::string good = encode_handover(sample_state());
    EXPECT_THROW(decode_handover("rl-handover 2\n" + good.substr(14)), DataError);
    EXPECT_THROW(decode_handover(good.substr(0, good.size() - 1)), DataError);
    EXPECT_THROW(decode_handover(good + "x"), DataError);
    HandoverState s = sample_state();
    s.fence = 0;  // a run that holds the lock has a fence
    EXPECT_THROW(decode_handover(encode_handover(s)), DataError);
    s = sample_state();
    s.supervisor_pid = 1LL << 40;
    EXPECT_THROW(decode_handover(encode_handover(s)), DataError);
    s = sample_state();
    s.token.clear();
    EXPECT_THROW(decode_handover(encode_handover(s)), DataError);
    // A length beyond the end.
    EXPECT_THROW(decode_handover("rl-handover 1\n99:abc"), DataError);
}

TEST(Handover, FileIsSealedAndReadsBack) {
    EXPECT_FALSE(handover_file("t", 1, std::nullopt, Deadline{}, {}));  // nothing remembered
    char a0[] = "redlock-run", a1[] = "X=1";
    char* envp[] = {a1, nullptr};
    remember_invocation({a0, "job", "--", "true"}, envp);
    // Forgotten after this test: a run in a later test must not hand over to this test binary.
    struct Forget {
        ~Forget() { remember_invocation({}, nullptr); }
    } forget;
    Fd f = handover_file("tok", 7, 5, Deadline{std::chrono::seconds(3)},
                         std::chrono::system_clock::time_point(std::chrono::seconds(1'000)));
    ASSERT_TRUE(f);
    EXPECT_GE(f.get(), 10);
    EXPECT_EQ(fcntl(f.get(), F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    HandoverState s = read_handover(f.get());
    EXPECT_EQ(s.token, "tok");
    EXPECT_EQ(s.fence, 7);
    EXPECT_EQ(s.slot, 5);
    EXPECT_EQ(s.supervisor_pid, getpid());
    EXPECT_EQ(s.acquired_boot_ns, 3'000'000'000);
    EXPECT_EQ(s.started_unix_ms, 1'000'000);
    EXPECT_EQ(s.env, std::vector<std::string>{"X=1"});
    EXPECT_EQ(s.argv.size(), 4u);
    // Nothing can change what the hand-over releases.
    EXPECT_LT(::pwrite(f.get(), "x", 1, 0), 0);
    EXPECT_LT(ftruncate(f.get(), 0), 0);
}

TEST(Handover, NoFileOnceForgotten) {
    EXPECT_FALSE(handover_file("t", 1, std::nullopt, Deadline{}, {}));
}

TEST(Handover, GroupAliveUntilOnlyZombiesAreLeft) {
    pid_t pid = sleeping_group();
    EXPECT_TRUE(group_alive(pid));
    kill(pid, SIGKILL);
    siginfo_t info{};
    // Dead but not reaped: a zombie runs nothing and holds no lock.
    ASSERT_EQ(waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);
    EXPECT_FALSE(group_alive(pid));
    waitpid(pid, nullptr, 0);
    EXPECT_FALSE(group_alive(pid));
}

// The release comes only once the command's group is dead, with the run's token, and records
// the run as killed under the dead run's pid.
TEST(Handover, RecordsKilledAndReleasesOnlyOnceTheGroupIsDead) {
    pid_t pid = sleeping_group();
    fake::Backend lock;
    bool alive_at_finish = true;
    lock.on_call([&](const fake::Call&) { alive_at_finish = group_alive(pid); });
    std::jthread killer([pid] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        kill(pid, SIGKILL);
    });
    RunOptions options;
    options.name = "fake-lock";
    options.command = {"true"};
    options.job.ledger_size = 100;
    HandoverState s = sample_state();
    s.acquired_boot_ns = BootClock::now().time_since_epoch().count();
    EXPECT_EQ(hand_over(options, s, pid, lock), 0);
    killer.join();
    waitpid(pid, nullptr, 0);
    EXPECT_FALSE(alive_at_finish);
    std::vector<fake::Call> calls = lock.givebacks();
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].kind, fake::Call::Kind::finish);
    EXPECT_EQ(calls[0].token, s.token);
    ASSERT_TRUE(calls[0].record);
    EXPECT_EQ(calls[0].record->outcome, Outcome::killed);
    EXPECT_TRUE(calls[0].record->held);
    EXPECT_EQ(calls[0].record->entry.pid, 4242);
    EXPECT_EQ(calls[0].record->entry.fence, 42);
    EXPECT_GE(calls[0].record->entry.duration_ms, 50);
}

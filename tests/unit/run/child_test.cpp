// Starting and reaping the command: exit statuses in the shell's convention, 126/127 for a
// command that cannot start, its own process group, and the mask it is given.
#include "run/child.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "run/watch_loop.hpp"
#include "util/exit_codes.hpp"

using redlock::Child;
using redlock::exit_status_of;
using redlock::SpawnError;

namespace {

sigset_t empty_mask() {
    sigset_t s;
    sigemptyset(&s);
    return s;
}

int run_to_end(Child& child) {
    for (int i = 0; i < 1000 && !child.try_reap(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(child.try_reap());
    return exit_status_of(child.wait_status());
}

std::string temp_dir() {
    char tmpl[] = "/tmp/redlock-child-test.XXXXXX";
    const char* d = mkdtemp(tmpl);
    EXPECT_NE(d, nullptr);
    return d ? d : "/tmp";
}

std::string read_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

TEST(ExitStatus, ExitCodeAsIs) {
    EXPECT_EQ(exit_status_of(0), 0);
    EXPECT_EQ(exit_status_of(3 << 8), 3);
    EXPECT_EQ(exit_status_of(255 << 8), 255);
}

TEST(ExitStatus, KilledBySignalIs128PlusN) {
    EXPECT_EQ(exit_status_of(SIGKILL), 128 + 9);
    EXPECT_EQ(exit_status_of(SIGTERM), 128 + 15);
    EXPECT_EQ(exit_status_of(SIGINT | 0x80), 128 + 2);  // with a core dump
}

TEST(ExitStatus, MatchesRealChildren) {
    Child exits = Child::spawn({"sh", "-c", "exit 42"}, {}, empty_mask());
    EXPECT_EQ(run_to_end(exits), 42);
    Child killed = Child::spawn({"sh", "-c", "kill -USR1 $$"}, {}, empty_mask());
    EXPECT_EQ(run_to_end(killed), 128 + SIGUSR1);
}

TEST(Spawn, MissingCommandIs127) {
    try {
        Child::spawn({"redlock-no-such-command-xyz"}, {}, empty_mask());
        FAIL();
    } catch (const SpawnError& e) {
        EXPECT_EQ(e.code(), redlock::exit_code::not_found);
        EXPECT_NE(std::string(e.what()).find("redlock-no-such-command-xyz"), std::string::npos);
    }
    EXPECT_THROW(Child::spawn({"/nonexistent/dir/cmd"}, {}, empty_mask()), SpawnError);
}

TEST(Spawn, NonExecutableFileIs126) {
    std::string dir = temp_dir();
    std::string file = dir + "/not-executable";
    std::ofstream(file) << "#!/bin/sh\nexit 0\n";
    chmod(file.c_str(), 0644);
    try {
        Child::spawn({file}, {}, empty_mask());
        FAIL();
    } catch (const SpawnError& e) {
        EXPECT_EQ(e.code(), redlock::exit_code::not_executable);
    }
    try {
        Child::spawn({dir}, {}, empty_mask());  // a directory
        FAIL();
    } catch (const SpawnError& e) {
        EXPECT_EQ(e.code(), redlock::exit_code::not_executable);
    }
    unlink(file.c_str());
    rmdir(dir.c_str());
}

TEST(Spawn, EnvironmentIsAddedAndOverrides) {
    setenv("REDLOCK_CHILD_TEST_KEEP", "kept", 1);
    setenv("REDLOCK_CHILD_TEST_OVER", "old", 1);
    std::string dir = temp_dir();
    std::string out = dir + "/env";
    Child c = Child::spawn(
        {"sh", "-c",
         "echo \"$REDLOCK_CHILD_TEST_KEEP $REDLOCK_CHILD_TEST_OVER $REDLOCK_CHILD_TEST_NEW\" > " +
             out},
        {{"REDLOCK_CHILD_TEST_OVER", "new"}, {"REDLOCK_CHILD_TEST_NEW", "added"}}, empty_mask());
    EXPECT_EQ(run_to_end(c), 0);
    EXPECT_EQ(read_file(out), "kept new added\n");
    unsetenv("REDLOCK_CHILD_TEST_KEEP");
    unsetenv("REDLOCK_CHILD_TEST_OVER");
    unlink(out.c_str());
    rmdir(dir.c_str());
}

TEST(Spawn, RunsInItsOwnProcessGroupWithTheGivenMask) {
    // Block a signal here; the child must get the mask it is handed, not ours.
    sigset_t usr2, old;
    sigemptyset(&usr2);
    sigaddset(&usr2, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &usr2, &old);
    std::string dir = temp_dir();
    std::string out = dir + "/status";
    Child c = Child::spawn(
        {"sh", "-c",
         // /proc/self of the commands, not of the shell: a shell blocks every signal around
         // its own fork, so reading its status while it forks sees a transient full mask.
         "grep -E '^SigBlk' /proc/self/status > " + out + "; cut -d' ' -f5 /proc/self/stat >> " +
             out},
        {}, empty_mask());
    EXPECT_EQ(run_to_end(c), 0);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    std::string status = read_file(out);
    EXPECT_NE(status.find("SigBlk:\t0000000000000000"), std::string::npos) << status;
    // fmt rather than "\n" + ...: GCC 12 at -O3 warns (-Wrestrict) about the inlined operator+.
    EXPECT_NE(status.find(fmt::format("\n{}\n", c.pid())), std::string::npos) << status;
    unlink(out.c_str());
    rmdir(dir.c_str());
}

TEST(Spawn, SignalReachesTheWholeGroup) {
    // A grandchild in the pipeline must die with the group, not linger.
    std::string dir = temp_dir();
    std::string gpid_file = dir + "/gpid";
    Child c = Child::spawn({"sh", "-c", "sh -c 'echo $$ > " + gpid_file + "; exec sleep 30' | cat"},
                           {}, empty_mask());
    for (int i = 0; i < 500 && read_file(gpid_file).empty(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::string gpid = read_file(gpid_file);
    ASSERT_FALSE(gpid.empty());
    gpid.pop_back();
    c.signal(SIGTERM);
    EXPECT_EQ(run_to_end(c), 128 + SIGTERM);
    // The orphaned grandchild is reaped by init, which may take its time: dead is enough.
    auto dead = [&] {
        std::string stat = read_file("/proc/" + gpid + "/stat");
        return stat.empty() || stat.substr(stat.rfind(')') + 2, 1) == "Z";
    };
    for (int i = 0; i < 200 && !dead(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_TRUE(dead()) << read_file("/proc/" + gpid + "/stat");
    unlink(gpid_file.c_str());
    rmdir(dir.c_str());
}

namespace {

// The state letter in /proc/PID/stat ('Z' for a zombie), or '?' when there is no such process.
char state_of(pid_t pid) {
    std::string stat = read_file(fmt::format("/proc/{}/stat", pid));
    auto paren = stat.rfind(") ");
    return paren == std::string::npos ? '?' : stat[paren + 2];
}

}  // namespace

TEST(Child, WaitStatusIsWhatWaitpidWouldReport) {
    Child exits = Child::spawn({"sh", "-c", "exit 7"}, {}, empty_mask());
    run_to_end(exits);
    EXPECT_TRUE(WIFEXITED(exits.wait_status()));
    EXPECT_EQ(WEXITSTATUS(exits.wait_status()), 7);
    Child killed = Child::spawn({"sh", "-c", "kill -TERM $$"}, {}, empty_mask());
    run_to_end(killed);
    EXPECT_TRUE(WIFSIGNALED(killed.wait_status()));
    EXPECT_EQ(WTERMSIG(killed.wait_status()), SIGTERM);
}

// Kills by process group id are safe only while the id names the command's group: the leader
// stays an unreaped zombie, holding it, until the watchdog is reaped.
TEST(Child, TheLeaderIsReapedOnlyAfterTheWatchdog) {
    redlock::Watchdog watchdog("child-test", redlock::BootClock::now() + std::chrono::minutes(1));
    pid_t dog = watchdog.pid();
    pid_t leader = 0;
    {
        Child child = Child::spawn({"sh", "-c", "exit 3"}, {}, empty_mask(), &watchdog);
        leader = child.pid();
        EXPECT_EQ(run_to_end(child), 3);
        EXPECT_EQ(state_of(leader), 'Z');
        // Told to go at the exit: dead (a zombie of ours) or dying, never reaped yet.
        for (int i = 0; i < 500 && state_of(dog) != 'Z'; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        EXPECT_EQ(state_of(dog), 'Z');
    }
    EXPECT_EQ(state_of(dog), '?');
    EXPECT_EQ(state_of(leader), '?');
}

// The watchdog started either way (the embedded program, or the fork it falls back to) is named
// rl-watchdog, in a group of its own, and SIGKILLs the command's group when the deadline passes
// with nobody extending it, as when redlock-run is stopped.
class WatchdogStart : public ::testing::TestWithParam<redlock::Watchdog::Start> {};

TEST_P(WatchdogStart, KillsTheGroupAtAnUnextendedDeadline) {
    using redlock::Watchdog;
    Watchdog watchdog("child-test", redlock::BootClock::now() + std::chrono::milliseconds(300),
                      GetParam());
    pid_t dog = watchdog.pid();
    ASSERT_GT(dog, 0);
    EXPECT_EQ(getpgid(dog), dog);
    std::string comm;
    for (int i = 0; i < 500 && comm != "rl-watchdog"; ++i) {
        std::ifstream in("/proc/" + std::to_string(dog) + "/comm");
        std::getline(in, comm);
        if (comm != "rl-watchdog") std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_EQ(comm, "rl-watchdog");
    char exe[256] = {};
    ssize_t n = readlink(("/proc/" + std::to_string(dog) + "/exe").c_str(), exe, sizeof exe - 1);
    ASSERT_GT(n, 0);
    // Its command line is its name alone, either way: nothing for `pkill -f redlock-run` (or
    // any other word of ours) to match.
    std::string cmdline = read_file("/proc/" + std::to_string(dog) + "/cmdline");
    cmdline.erase(cmdline.find_last_not_of('\0') + 1);
    EXPECT_EQ(cmdline, "rl-watchdog");
    // The embedded program runs from its memory file; the fork runs our own binary.
    EXPECT_EQ(std::string(exe).find("memfd:rl-watchdog") != std::string::npos,
              GetParam() == Watchdog::Start::exec_or_fork)
        << exe;
    Child child = Child::spawn({"sleep", "30"}, {}, empty_mask(), &watchdog);
    run_to_end(child);
    EXPECT_TRUE(WIFSIGNALED(child.wait_status()));
    EXPECT_EQ(WTERMSIG(child.wait_status()), SIGKILL);
}

namespace {

// A process's voluntary context switches: one more each time it goes to sleep (or stops).
long voluntary_switches(pid_t pid) {
    std::istringstream in(read_file(fmt::format("/proc/{}/status", pid)));
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("voluntary_ctxt_switches:", 0) == 0) return std::stol(line.substr(24));
    return -1;
}

// The watchdog's name once it is set (the embedded program's exec, or the fork's prctl).
void await_watchdog_name(pid_t dog) {
    std::string comm;
    for (int i = 0; i < 500 && comm != "rl-watchdog"; ++i) {
        std::ifstream in("/proc/" + std::to_string(dog) + "/comm");
        std::getline(in, comm);
        if (comm != "rl-watchdog") std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_EQ(comm, "rl-watchdog");
}

}  // namespace

// A watchdog stopped for longer than the lease while redlock-run went on renewing, then resumed:
// the command lives on. The renewals are more than a pipe holds (a full pipe once dropped the
// newest), all but the last already past when it resumes: only the newest may count, and it
// must be read before the clock is compared with anything.
TEST_P(WatchdogStart, AWatchdogStoppedPastTheLeaseSparesACommandWhoseLeaseWasRenewed) {
    using redlock::BootClock;
    using redlock::Watchdog;
    using namespace std::chrono_literals;
    redlock::Deadline first = BootClock::now() + 300ms;
    Watchdog watchdog("child-test", first, GetParam());
    pid_t dog = watchdog.pid();
    ASSERT_GT(dog, 0);
    await_watchdog_name(dog);
    Child child = Child::spawn({"sleep", "30"}, {}, empty_mask(), &watchdog);
    ASSERT_EQ(::kill(dog, SIGSTOP), 0);
    for (int i = 0; i < 1000 && state_of(dog) != 'T'; ++i) std::this_thread::sleep_for(1ms);
    ASSERT_EQ(state_of(dog), 'T');
    for (int i = 1; i <= 5000; ++i) watchdog.extend(first + std::chrono::microseconds(i));
    watchdog.extend(BootClock::now() + 10min);
    // Past every deadline but the newest before it may run again.
    while (BootClock::now() < first + 50ms) std::this_thread::sleep_for(10ms);
    long stopped_at = voluntary_switches(dog);
    ASSERT_EQ(::kill(dog, SIGCONT), 0);
    // Resumed, it either acts at once (kills and exits) or goes back to sleep until the newest
    // deadline: its next voluntary switch.
    for (int i = 0; i < 5000; ++i) {
        char st = state_of(dog);
        if (st == 'Z' || st == '?' || (st == 'S' && voluntary_switches(dog) > stopped_at)) break;
        std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(state_of(dog), 'S');
    EXPECT_FALSE(child.try_reap()) << "the watchdog killed a command whose lease was renewed";
    child.signal(SIGKILL);
    run_to_end(child);
}

// The watchdog's message is on stderr even though redlock-run, seeing the command die, stops
// the watchdog at once (a bare 137 once left the operator guessing). Its stderr here is a full
// pipe, read only once the command was reaped: the watchdog is still writing when it is told
// to go, which made the race that lost the message certain.
TEST_P(WatchdogStart, ItsMessageIsWrittenAlthoughTheRunStopsItAsItReapsTheCommand) {
    using redlock::Watchdog;
    using namespace std::chrono_literals;
    int p[2];
    ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
    int capacity = ::fcntl(p[1], F_GETPIPE_SZ);
    ASSERT_GT(capacity, 0);
    std::string filler(static_cast<std::size_t>(capacity), 'x');
    ASSERT_EQ(::write(p[1], filler.data(), filler.size()), capacity);  // full, never blocked
    int saved = ::dup(STDERR_FILENO);
    ::dup2(p[1], STDERR_FILENO);
    std::optional<Watchdog> watchdog;
    watchdog.emplace("child-test", redlock::BootClock::now() + 200ms, GetParam());
    ::dup2(saved, STDERR_FILENO);
    ::close(saved);
    ::close(p[1]);
    std::string got;
    std::thread reader;
    pid_t group = 0;
    {
        Child child = Child::spawn({"sleep", "30"}, {}, empty_mask(), &*watchdog);
        run_to_end(child);
        EXPECT_EQ(WTERMSIG(child.wait_status()), SIGKILL);
        // Read only now that the run has seen the command die and told the watchdog to go.
        reader = std::thread([&] {
            char buf[4096];
            ssize_t n;
            while ((n = ::read(p[0], buf, sizeof buf)) > 0)
                got.append(buf, static_cast<std::size_t>(n));
        });
        group = child.pid();
    }  // the Child's end dismisses the watchdog, then reaps the leader
    watchdog.reset();
    reader.join();  // EOF: the watchdog held the last write end
    ::close(p[0]);
    EXPECT_NE(got.find(fmt::format("the watchdog sent SIGKILL to its process group {}\n", group)),
              std::string::npos)
        << got.substr(got.find_first_not_of('x') == std::string::npos ? got.size()
                                                                      : got.find_first_not_of('x'));
}

// A process that pauses until killed; in a group of its own when `leader`.
pid_t paused_process(bool leader) {
    pid_t pid = fork();
    if (pid == 0) {
        if (leader) setpgid(0, 0);
        for (;;) pause();
    }
    if (leader) setpgid(pid, pid);
    return pid;
}

// The watchdog kills only a group that is one: an announced id that does not lead a group of
// its own (here a process in the test's group) is ignored, and the command's real group, which
// comes after it, is the one killed. It used to take any id, kill(-1) included.
TEST_P(WatchdogStart, IgnoresAnAnnouncedIdThatIsNotTheCommandsGroup) {
    using redlock::Watchdog;
    // As in redlock-run, where SIGPIPE is blocked: a watchdog that exited makes a write fail.
    struct IgnorePipe {
        void (*old)(int) = signal(SIGPIPE, SIG_IGN);
        ~IgnorePipe() { signal(SIGPIPE, old); }
    } ignore_pipe;
    // A deadline already past: the watchdog kills the first group it accepts at once.
    Watchdog watchdog("child-test", redlock::BootClock::now() - std::chrono::seconds(1),
                      GetParam());
    pid_t member = paused_process(false), leader = paused_process(true);
    redlock::announce_process_group(watchdog.announce_fd(), member);
    redlock::announce_process_group(watchdog.announce_fd(), leader);
    int status = 0;
    pid_t reaped = 0;
    for (int i = 0; i < 5000 && reaped == 0; ++i) {
        reaped = waitpid(leader, &status, WNOHANG);
        if (reaped == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (reaped == 0) {
        kill(leader, SIGKILL);
        waitpid(leader, &status, 0);
        ADD_FAILURE() << "the command's group was not killed";
    } else {
        EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    }
    EXPECT_EQ(waitpid(member, &status, WNOHANG), 0);  // untouched
    kill(member, SIGKILL);
    waitpid(member, &status, 0);
    watchdog.dismiss();
}

// What the watchdog accepts as the command's group (checked here in the test's own process):
// never 1 (kill(-1) reaches every process), 0, a negative id, its own group or its parent's,
// nor an id that leads no group; a process that leads its own group, yes.
TEST(WatchdogGroup, OnlyALiveGroupLeaderThatIsNeitherOursNorOurParents) {
    using redlock::watch_loop::is_command_group;
    EXPECT_FALSE(is_command_group(1));
    EXPECT_FALSE(is_command_group(0));
    EXPECT_FALSE(is_command_group(-1));
    EXPECT_FALSE(is_command_group(-getpgrp()));
    EXPECT_FALSE(is_command_group(getpgrp()));
    EXPECT_FALSE(is_command_group(getpgid(getppid())));
    EXPECT_FALSE(is_command_group(std::int64_t{1} << 40));
    pid_t member = paused_process(false), leader = paused_process(true);
    EXPECT_FALSE(is_command_group(member));
    EXPECT_TRUE(is_command_group(leader));
    int status = 0;
    kill(member, SIGKILL);
    kill(leader, SIGKILL);
    waitpid(member, &status, 0);
    waitpid(leader, &status, 0);
    EXPECT_FALSE(is_command_group(leader));  // gone: no group of that id any more
}

INSTANTIATE_TEST_SUITE_P(BothWays, WatchdogStart,
                         ::testing::Values(redlock::Watchdog::Start::exec_or_fork,
                                           redlock::Watchdog::Start::fork));

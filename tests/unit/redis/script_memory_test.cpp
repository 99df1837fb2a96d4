#include "redis/script_memory.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "redis/connection.hpp"
#include "redis/redis_url.hpp"

namespace redlock {
namespace {

namespace fs = std::filesystem;

// No unit test reads or writes the memory of the user who runs them: every Connection in this
// binary finds no cache directory (the first call of main's is later than this), so it sends
// digests first, as the tests of the NOSCRIPT paths expect. The tests here name their own.
const bool no_user_cache = [] {
    ::setenv("XDG_CACHE_HOME", "/nonexistent/redlock-run-unit-tests", 1);
    return true;
}();

const std::string d1(40, 'a'), d2(40, 'b'), d3(40, 'c');

struct TempHome {
    TempHome() {
        std::string tmpl = (fs::temp_directory_path() / "script-memory-XXXXXX").string();
        dir = ::mkdtemp(tmpl.data());
        ::chmod(dir.c_str(), 0700);
    }
    ~TempHome() { fs::remove_all(dir); }
    std::string dir;
};

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

// The one file a server's memory is kept in.
fs::path memory_file(const std::string& home) {
    for (const auto& e : fs::directory_iterator(fs::path(home) / "redlock-run")) return e.path();
    return {};
}

TEST(ScriptMemory, WhatOneRunLearnsTheNextRunKnowsForThatServerOnly) {
    TempHome home;
    ScriptMemory first = ScriptMemory::open_in(home.dir, "127.0.0.1:6379");
    ASSERT_TRUE(first.usable());
    EXPECT_FALSE(first.knows(d1));
    first.learn(d1);
    EXPECT_TRUE(first.knows(d1));
    EXPECT_TRUE(ScriptMemory::open_in(home.dir, "127.0.0.1:6379").knows(d1));
    EXPECT_FALSE(ScriptMemory::open_in(home.dir, "127.0.0.1:6380").knows(d1));
    // Made for it, and nobody else's to read or change.
    struct stat st {};
    ASSERT_EQ(::stat((home.dir + "/redlock-run").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
    ASSERT_EQ(::stat(memory_file(home.dir).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u);
}

TEST(ScriptMemory, AMissingScriptForgetsEverythingRemembered) {
    TempHome home;
    ScriptMemory m = ScriptMemory::open_in(home.dir, "s");
    m.learn(d1);
    m.learn(d2);
    m.forget_all();
    EXPECT_FALSE(m.knows(d2));
    ScriptMemory next = ScriptMemory::open_in(home.dir, "s");
    EXPECT_FALSE(next.knows(d1));
    EXPECT_FALSE(next.knows(d2));
}

TEST(ScriptMemory, KeepsTheNewestDigestsOnly) {
    TempHome home;
    ScriptMemory m = ScriptMemory::open_in(home.dir, "s");
    for (std::size_t i = 0; i < ScriptMemory::most + 2; ++i) m.learn(fmt::format("{:040x}", i));
    ScriptMemory next = ScriptMemory::open_in(home.dir, "s");
    EXPECT_FALSE(next.knows(fmt::format("{:040x}", 0)));
    EXPECT_FALSE(next.knows(fmt::format("{:040x}", 1)));
    EXPECT_TRUE(next.knows(fmt::format("{:040x}", 2)));
    EXPECT_TRUE(next.knows(fmt::format("{:040x}", ScriptMemory::most + 1)));
    // Nothing but digests is learned or read back.
    m.learn("not a digest");
    std::ofstream(memory_file(home.dir), std::ios::app) << "ABC\n" << std::string(40, 'G') << "\n";
    ScriptMemory read = ScriptMemory::open_in(home.dir, "s");
    EXPECT_FALSE(read.knows("not a digest"));
    EXPECT_FALSE(read.knows(std::string(40, 'G')));
    EXPECT_TRUE(read.knows(fmt::format("{:040x}", ScriptMemory::most + 1)));
}

TEST(ScriptMemory, ADirectoryOthersMayWriteToIsNotUsed) {
    TempHome home;
    ::chmod(home.dir.c_str(), 0777);
    EXPECT_FALSE(ScriptMemory::open_in(home.dir, "s").usable());
    EXPECT_FALSE(fs::exists(fs::path(home.dir) / "redlock-run"));
    ::chmod(home.dir.c_str(), 0700);
    ASSERT_TRUE(ScriptMemory::open_in(home.dir, "s").usable());
    ::chmod((home.dir + "/redlock-run").c_str(), 0770);
    EXPECT_FALSE(ScriptMemory::open_in(home.dir, "s").usable());
}

TEST(ScriptMemory, ADirectoryOfAnotherUserIsNotUsed) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory away";
    TempHome home;
    ASSERT_EQ(::chown(home.dir.c_str(), 65534, 65534), 0);
    EXPECT_FALSE(ScriptMemory::open_in(home.dir, "s").usable());
    // Nor is a cache home made inside another user's directory.
    EXPECT_FALSE(ScriptMemory::open_in(home.dir + "/.cache", "s").usable());
    EXPECT_FALSE(fs::exists(fs::path(home.dir) / ".cache"));
}

// The attack a root run must not fall for: links planted where it writes. A link for the
// directory makes the memory unusable; a link for the file is replaced, never written through.
TEST(ScriptMemory, LinksAreNeverFollowed) {
    TempHome home, elsewhere;
    fs::create_directory_symlink(elsewhere.dir, fs::path(home.dir) / "redlock-run");
    EXPECT_FALSE(ScriptMemory::open_in(home.dir, "s").usable());
    fs::remove(fs::path(home.dir) / "redlock-run");

    ScriptMemory m = ScriptMemory::open_in(home.dir, "s");
    m.learn(d1);
    const fs::path file = memory_file(home.dir);
    const fs::path target = fs::path(elsewhere.dir) / "victim";
    std::ofstream(target) << d2 << "\n";
    fs::remove(file);
    fs::create_symlink(target, file);
    ScriptMemory linked = ScriptMemory::open_in(home.dir, "s");
    ASSERT_TRUE(linked.usable());
    EXPECT_FALSE(linked.knows(d2));  // not read through the link
    linked.learn(d3);
    EXPECT_EQ(slurp(target), d2 + "\n");  // not written through it
    EXPECT_FALSE(fs::is_symlink(file));
    EXPECT_TRUE(ScriptMemory::open_in(home.dir, "s").knows(d3));
}

TEST(ScriptMemory, AFifoOrAnOversizedFileIsNotRead) {
    TempHome home;
    ScriptMemory m = ScriptMemory::open_in(home.dir, "s");
    m.learn(d1);
    const fs::path file = memory_file(home.dir);
    fs::remove(file);
    ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
    EXPECT_FALSE(ScriptMemory::open_in(home.dir, "s").knows(d1));  // returns, unread
    fs::remove(file);
    std::ofstream(file) << std::string(9000, '\n') << d1 << "\n";
    EXPECT_FALSE(ScriptMemory::open_in(home.dir, "s").knows(d1));
}

TEST(ScriptMemory, ACacheHomeThatIsMissingIsMadeInADirectoryOfOurs) {
    TempHome home;
    const std::string cache = home.dir + "/.cache";
    ScriptMemory m = ScriptMemory::open_in(cache, "s");
    ASSERT_TRUE(m.usable());
    struct stat st {};
    ASSERT_EQ(::stat(cache.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0700u);
}

// Connection takes a script that no run saw on its server as missing, so that Script::run
// sends the body at once; once it ran, the next run's connection sends the digest; a NOSCRIPT
// for one remembered makes every script of that server missing again.
TEST(ScriptMemory, AConnectionSendsTheBodyOnlyWhereNoRunSawTheScriptRun) {
    TempHome home;
    struct Env {
        explicit Env(const std::string& dir) { ::setenv("XDG_CACHE_HOME", dir.c_str(), 1); }
        ~Env() { ::setenv("XDG_CACHE_HOME", "/nonexistent/redlock-run-unit-tests", 1); }
    } env(home.dir);
    const Endpoint server = parse_redis_url("redis://127.0.0.1:1");
    {
        Connection first(server, Timeouts{});
        EXPECT_TRUE(first.script_uncached(d1));
        first.set_script_uncached(d1, false);  // the EVAL answered
        first.set_script_uncached(d2, false);
        EXPECT_FALSE(first.script_uncached(d1));
    }
    {
        Connection second(server, Timeouts{});
        EXPECT_FALSE(second.script_uncached(d1));
        EXPECT_FALSE(second.script_uncached(d2));
        EXPECT_TRUE(second.script_uncached(d3));
        EXPECT_TRUE(
            Connection(parse_redis_url("redis://127.0.0.1:2"), Timeouts{}).script_uncached(d1));
        second.set_script_uncached(d1, true);  // NOSCRIPT: the server's cache was emptied
    }
    Connection third(server, Timeouts{});
    EXPECT_TRUE(third.script_uncached(d1));
    EXPECT_TRUE(third.script_uncached(d2));
}

}  // namespace
}  // namespace redlock

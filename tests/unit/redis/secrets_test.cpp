// Secrets in memory: a process that has read a password is not dumpable.
#include "redis/secrets.hpp"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace {

// Runs `body` in a child, dumpable at the start, so that the test process keeps its own flag; the
// child's exit status is the flag afterwards.
int dumpable_after(void (*body)(const std::string&), const std::string& arg) {
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_DUMPABLE, 1);  // an earlier test in this process may have cleared it
        body(arg);
        _exit(prctl(PR_GET_DUMPABLE));
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WEXITSTATUS(status);
}

}  // namespace

TEST(Secrets, APasswordFromAFileOrTheUrlMakesTheProcessNonDumpable) {
    auto path =
        std::filesystem::temp_directory_path() / ("redlock-secret-" + std::to_string(getpid()));
    std::ofstream(path) << "pw\n";
    EXPECT_EQ(
        dumpable_after([](const std::string& p) { redlock::read_password_file(p); }, path.string()),
        0);
    EXPECT_EQ(dumpable_after([](const std::string&) { redlock::resolve_password("", "pw"); }, ""),
              0);
    EXPECT_EQ(dumpable_after(
                  [](const std::string&) {
                      unsetenv("REDLOCK_PASSWORD");
                      unsetenv("REDISCLI_AUTH");
                      redlock::resolve_password("", std::nullopt);
                  },
                  ""),
              1);
    std::filesystem::remove(path);
}

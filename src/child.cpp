#include "child.hpp"

#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

extern char** environ;

namespace redlock {
namespace {

struct SpawnAttr {
    posix_spawnattr_t attr;
    SpawnAttr() { posix_spawnattr_init(&attr); }
    ~SpawnAttr() { posix_spawnattr_destroy(&attr); }
};

struct FileActions {
    posix_spawn_file_actions_t actions;
    FileActions() { posix_spawn_file_actions_init(&actions); }
    ~FileActions() { posix_spawn_file_actions_destroy(&actions); }
};

bool we_own_terminal() {
    return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
}

}  // namespace

Child Child::spawn(const std::vector<std::string>& argv, const Env& env, const sigset_t& mask) {
    std::map<std::string, std::string> overrides(env.begin(), env.end());
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) {
        std::string_view entry(*e);
        if (!overrides.contains(std::string(entry.substr(0, entry.find('=')))))
            env_strings.emplace_back(entry);
    }
    for (const auto& [k, v] : overrides) env_strings.push_back(k + "=" + v);

    std::vector<char*> c_argv, c_env;
    for (const auto& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
    c_argv.push_back(nullptr);
    for (auto& e : env_strings) c_env.push_back(e.data());
    c_env.push_back(nullptr);

    SpawnAttr attr;
    posix_spawnattr_setpgroup(&attr.attr, 0);
    posix_spawnattr_setsigmask(&attr.attr, &mask);
    posix_spawnattr_setflags(&attr.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    FileActions actions;
    bool take_terminal = we_own_terminal();
    if (take_terminal) posix_spawn_file_actions_addtcsetpgrp_np(&actions.actions, STDIN_FILENO);

    pid_t pid = -1;
    int err = posix_spawnp(&pid, c_argv[0], &actions.actions, &attr.attr, c_argv.data(),
                           c_env.data());
    if (err == ENOENT || err == ENOTDIR)
        throw SpawnError(fmt::format("{}: command not found", argv[0]), exit_code::not_found);
    if (err != 0)
        throw SpawnError(fmt::format("{}: cannot run: {}", argv[0], std::strerror(err)),
                         exit_code::not_executable);
    return Child(pid, take_terminal);
}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      took_terminal_(std::exchange(other.took_terminal_, false)),
      status_(other.status_) {}

Child::~Child() {
    if (pid_ <= 0) return;
    if (!status_) {
        signal(SIGKILL);
        int status = 0;
        while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
    }
    restore_terminal();
}

void Child::signal(int sig) const {
    if (pid_ <= 0 || status_) return;
    if (::kill(-pid_, sig) < 0 && errno == ESRCH) ::kill(pid_, sig);
}

bool Child::try_reap() {
    if (status_) return true;
    int status = 0;
    pid_t r;
    while ((r = waitpid(pid_, &status, WNOHANG)) < 0 && errno == EINTR) {
    }
    if (r != pid_) return false;
    status_ = status;
    restore_terminal();
    return true;
}

void Child::restore_terminal() {
    // SIGTTOU is blocked (see SignalEvents), so taking the foreground back is allowed.
    if (took_terminal_) tcsetpgrp(STDIN_FILENO, getpgrp());
    took_terminal_ = false;
}

int exit_status_of(int wait_status) {
    if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status)) return exit_code::signal_base + WTERMSIG(wait_status);
    return exit_code::internal;
}

}  // namespace redlock

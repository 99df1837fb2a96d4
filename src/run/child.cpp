#include "run/child.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <system_error>

#include "util/fd.hpp"

extern char** environ;

namespace redlock {
namespace {

bool we_own_terminal() {
    return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
}

// Where execvp would look for `name`, computed before fork: the child may only make system calls.
std::vector<std::string> candidate_paths(const std::string& name) {
    if (name.find('/') != std::string::npos) return {name};
    const char* env = std::getenv("PATH");
    std::string_view path = env && *env ? env : "/usr/local/bin:/usr/bin:/bin";
    std::vector<std::string> out;
    for (;;) {
        auto colon = path.find(':');
        std::string_view dir = path.substr(0, colon);
        std::string& candidate = out.emplace_back(dir.empty() ? "." : dir);
        candidate.append("/").append(name);
        if (colon == std::string_view::npos) break;
        path.remove_prefix(colon + 1);
    }
    return out;
}

// Everything the child needs between vfork and exec, prepared by the parent: the child shares
// the parent's memory and may only make system calls.
struct ExecPlan {
    const std::vector<std::string>* paths;
    char** argv;
    char** sh_argv;  // /bin/sh, slot 1 for the script's path, then argv[1...]
    char** env;
    const sigset_t* mask;
    int error_fd;     // write end of the close-on-exec pipe
    int announce_fd;  // the watchdog's pipe, or -1
    bool take_terminal;
    pid_t parent;
};

[[noreturn]] void exec_child(const ExecPlan& plan) noexcept {
    setpgid(0, 0);
    if (plan.take_terminal) tcsetpgrp(STDIN_FILENO, getpid());
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    // Before the check below and before exec: if redlock-run dies after this, the watchdog knows
    // the group to kill; if before, the check (or PR_SET_PDEATHSIG) ends us before the command
    // runs. Either way no instruction of the command runs unguarded.
    announce_process_group(plan.announce_fd, getpid());
    if (getppid() != plan.parent) _exit(exit_code::internal);  // parent already gone
    sigprocmask(SIG_SETMASK, plan.mask, nullptr);
    int err = ENOENT;
    for (const auto& path : *plan.paths) {
        execve(path.c_str(), plan.argv, plan.env);
        if (errno == ENOEXEC) {
            // For a script without "#!": like execvp, run it with /bin/sh.
            plan.sh_argv[1] = const_cast<char*>(path.c_str());
            execve(plan.sh_argv[0], plan.sh_argv, plan.env);
        }
        // Like execvp: remember a permission problem, keep looking past a missing file.
        if (errno != ENOENT && errno != ENOTDIR) err = errno;
    }
    while (::write(plan.error_fd, &err, sizeof err) < 0 && errno == EINTR) {
    }
    _exit(exit_code::not_found);
}

// vfork + execve rather than posix_spawn, for PR_SET_PDEATHSIG: if redlock-run is killed outright
// (SIGKILL, OOM killer) nobody renews the lock any more, and the command must not run on
// unguarded. vfork rather than fork: the parent waits for the exec anyway, and sharing the memory
// spares copying the page tables and every copy-on-write fault after it. A function of its own,
// so that nothing of the caller's lives in registers across vfork's second return.
pid_t start_child(const ExecPlan& plan) {
    pid_t pid = vfork();
    if (pid == 0) exec_child(plan);
    return pid;
}

SpawnError fork_failed(const std::string& command, int err) {
    return SpawnError(
        fmt::format("{}: cannot start the command: fork: {}{}", command, std::strerror(err),
                    err == EAGAIN ? " (a process limit reached: RLIMIT_NPROC or a "
                                    "cgroup's pids.max?)"
                                  : ""),
        exit_code::cannot_fork);
}
}  // namespace

Child Child::spawn(const std::vector<std::string>& argv, const Env& env, const sigset_t& mask,
                   Watchdog* watchdog) {
    // Our environment without the names `env` sets, then `env`: pointers to our own strings, which
    // nothing changes before the exec, rather than a copy of every one.
    std::vector<std::string> added;
    added.reserve(env.size());
    for (const auto& [name, value] : env) added.push_back(name + "=" + value);
    std::vector<char*> c_argv, c_env;
    for (char** e = environ; *e; ++e) {
        std::string_view entry(*e);
        std::string_view name = entry.substr(0, entry.find('='));
        if (std::none_of(env.begin(), env.end(), [&](const auto& kv) { return kv.first == name; }))
            c_env.push_back(*e);
    }
    for (std::string& entry : added) c_env.push_back(entry.data());
    c_env.push_back(nullptr);
    for (const auto& a : argv) c_argv.push_back(const_cast<char*>(a.c_str()));
    c_argv.push_back(nullptr);
    std::vector<std::string> paths = candidate_paths(argv.front());
    std::string shell = "/bin/sh";
    std::vector<char*> sh_argv{shell.data(), nullptr};
    sh_argv.insert(sh_argv.end(), c_argv.begin() + 1, c_argv.end());

    // The exec error travels back through a close-on-exec pipe: EOF means exec succeeded.
    int pipe_fds[2];
    if (pipe2(pipe_fds, O_CLOEXEC) < 0)
        throw std::system_error(errno, std::generic_category(), "pipe2");
    Fd err_read(pipe_fds[0]), err_write(pipe_fds[1]);
    bool take_terminal = we_own_terminal();
    ExecPlan plan{&paths,
                  c_argv.data(),
                  sh_argv.data(),
                  c_env.data(),
                  &mask,
                  err_write.get(),
                  watchdog ? watchdog->announce_fd() : -1,
                  take_terminal,
                  getpid()};
    pid_t pid = start_child(plan);
    // No process for the command (EAGAIN at a process limit, ENOMEM): the run cannot start it,
    // which Run::start records and answers like a command not found, releasing the lock.
    if (pid < 0) throw fork_failed(argv.front(), errno);
    setpgid(pid, pid);  // also from here, so the group exists before we ever signal it
    err_write.reset();
    int err = 0;
    ssize_t n;
    while ((n = ::read(err_read.get(), &err, sizeof err)) < 0 && errno == EINTR) {
    }
    if (n > 0) {
        if (watchdog) watchdog->dismiss();  // it knows the group: gone before the id is free
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (take_terminal) tcsetpgrp(STDIN_FILENO, getpgrp());
        if (err == ENOENT || err == ENOTDIR)
            throw SpawnError(fmt::format("{}: command not found", argv[0]), exit_code::not_found);
        throw SpawnError(fmt::format("{}: cannot run: {}", argv[0], std::strerror(err)),
                         exit_code::not_executable);
    }
    return Child(pid, take_terminal, watchdog);
}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      took_terminal_(std::exchange(other.took_terminal_, false)),
      watchdog_(std::exchange(other.watchdog_, nullptr)),
      status_(other.status_) {}

Child::~Child() {
    if (pid_ <= 0) return;
    if (!status_) signal(SIGKILL);
    reap();
    restore_terminal();
}

// Reaping frees the leader's pid, and with it the process group id, for reuse: the watchdog, which
// kills by that id, is killed and reaped first, so it can never signal a stranger's group.
void Child::reap() noexcept {
    if (watchdog_) watchdog_->dismiss();
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    if (!status_) status_ = status;
}

namespace {

// The wait status waitpid would give for what waitid reported.
int wait_status_of(const siginfo_t& info) {
    if (info.si_code == CLD_EXITED) return (info.si_status & 0xff) << 8;
    if (info.si_code == CLD_DUMPED) return info.si_status | WCOREFLAG;
    return info.si_status;  // CLD_KILLED
}

}  // namespace

void Child::signal(int sig) const {
    if (pid_ <= 0 || status_) return;
    if (::kill(-pid_, sig) < 0 && errno == ESRCH) ::kill(pid_, sig);
}

// The exit is seen without reaping (WNOWAIT), and the leader stays a zombie, holding its process
// group id, until the destructor: after the release, the ledger's record and the report. The
// watchdog gets its SIGKILL now and dies while those round trips are in flight, instead of
// redlock-run waiting for it (and for a CPU to run its exit on) before them. Until it is reaped
// it can only kill the command's group, its leader already dead; the order that matters, the
// watchdog reaped before the leader, is the destructor's.
bool Child::try_reap() {
    if (status_) return true;
    // Stops are asked for separately: a WNOWAIT stop report would stay and be seen again.
    siginfo_t info{};
    while (waitid(P_PID, pid_, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == EINTR) {
    }
    if (info.si_pid == pid_) {
        status_ = wait_status_of(info);
        if (watchdog_) watchdog_->stop();
        restore_terminal();
        return true;
    }
    info = {};
    while (waitid(P_PID, pid_, &info, WSTOPPED | WNOHANG) < 0 && errno == EINTR) {
    }
    if (info.si_pid == pid_ && took_terminal_) suspend_with_terminal();
    return false;
}

// ^Z at the terminal stops only the command's group, the one in the foreground. The shell waits
// for us, so we stop too, with the terminal handed back, and on fg pass the terminal and SIGCONT
// on. While we are stopped nothing renews the lock: a suspension longer than the lease makes the
// lock lost when we resume, which the main loop then reports and acts on.
void Child::suspend_with_terminal() {
    tcsetpgrp(STDIN_FILENO, getpgrp());
    ::kill(getpid(), SIGSTOP);
    // Resumed by the shell's fg (terminal given back to our group) or bg (not).
    if (tcgetpgrp(STDIN_FILENO) == getpgrp()) tcsetpgrp(STDIN_FILENO, pid_);
    ::kill(-pid_, SIGCONT);
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

// redlock-run: run a command while holding a Redis lock. This file only reads the command line,
// dispatches, and maps every failure to one message and one exit code.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli.hpp"
#include "inspect/inspect.hpp"
#include "run/handover.hpp"
#include "run/run.hpp"
#include "util/errors.hpp"
#include "util/exit_codes.hpp"
#include "util/log.hpp"
#include "util/number.hpp"

namespace {

// A file descriptor that is not open becomes /dev/null: the watchdog closed our stdin and
// stdout, and a socket opened on fd 1 would take whatever is printed.
void open_standard_fds() {
    for (int fd = 0; fd <= 2; ++fd)
        if (fcntl(fd, F_GETFD) < 0) {
            int null = open("/dev/null", O_RDWR);
            if (null >= 0 && null != fd) {
                dup2(null, fd);
                close(null);
            }
        }
}

// rl-handover (run/handover.hpp): executed by the watchdog after redlock-run died, with every
// signal blocked, its inputs on fds 5 and 6, argv its name and the command's process group
// (which the watchdog killed), an empty environment. It reads the run's command line and
// environment from the file, parses them as the run did (so it reaches the same lock on every
// topology), records the run and releases the lock. A timer bounds the whole of it: a dead or
// slow Redis, or a command's process that will not die, ends it, and the lock expires by itself.
int handover_main(const char* group_text) {
    using namespace redlock;
    open_standard_fds();
    prctl(PR_SET_NAME, "rl-handover");  // the exec from a descriptor named it after the number
    sigset_t alarm_only;
    sigemptyset(&alarm_only);
    sigaddset(&alarm_only, SIGALRM);
    signal(SIGALRM, SIG_DFL);
    sigprocmask(SIG_UNBLOCK, &alarm_only, nullptr);
    alarm(static_cast<unsigned>(std::chrono::ceil<std::chrono::seconds>(handover_bound).count()));
    constexpr int state_fd = 6;  // run/watch_loop.hpp's handover_fd
    std::optional<long long> group = parse_integer(group_text, 2, INT32_MAX);
    if (!group) throw UsageError("rl-handover is started by redlock-run's watchdog only");
    HandoverState state = read_handover(state_fd);
    // Nothing else of the watchdog's (its pipe, the lease's file, our binary) is ours to keep.
    close_range(3, ~0U, 0);
    clearenv();
    for (const std::string& e : state.env) putenv(strdup(e.c_str()));
    Invocation inv = parse_command_line(state.argv);
    if (inv.action != Action::run)
        throw Error("the hand-over's command line is not a run", exit_code::internal);
    return hand_over(inv.run, state, static_cast<long>(*group));
}

}  // namespace

int main(int argc, char** argv) {
    using namespace redlock;
    try {
        if (argc == 2 && argv[0] == handover_program) return handover_main(argv[1]);
        std::vector<std::string> args(argv, argv + argc);
        // Before anything reads or scrubs the environment: a hand-over parses both again.
        remember_invocation(args, environ);
        Invocation inv = parse_command_line(args);
        switch (inv.action) {
            case Action::help:
            case Action::version:
                std::fputs(inv.text.c_str(), stdout);
                return exit_code::ok;
            case Action::run:
                return run_command(inv.run);
            case Action::status:
                return status_command(inv.inspect);
            case Action::list:
                return list_command(inv.inspect);
            case Action::release:
                return release_command(inv.inspect);
            case Action::history:
                return history_command(inv.inspect);
        }
    } catch (const std::exception& e) {
        Failure failure = failure_of(e);
        log::error("{}", failure.message);
        return failure.code;
    }
    return exit_code::internal;
}

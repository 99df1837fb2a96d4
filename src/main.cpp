// redlock-run: run a command while holding a Redis lock. This file only reads the command line,
// dispatches, and maps every failure to one message and one exit code.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "cli/cli.hpp"
#include "inspect/inspect.hpp"
#include "run/run.hpp"
#include "util/errors.hpp"
#include "util/exit_codes.hpp"
#include "util/log.hpp"

int main(int argc, char** argv) {
    using namespace redlock;
    try {
        Invocation inv = parse_command_line(std::vector<std::string>(argv, argv + argc));
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

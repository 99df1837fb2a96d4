// The command line: where options end, which action runs, and turning option text into
// validated RunOptions. Options stop at the first "--" or at the first word after NAME (as
// getopt's "+" mode, env and timeout do), so the command's own options are never taken for ours.
#pragma once

#include <string>
#include <vector>

#include "inspect/inspect.hpp"
#include "run/run.hpp"

namespace redlock {

enum class Action { run, status, list, release, history, help, version };

struct Invocation {
    Action action = Action::run;
    RunOptions run;
    InspectOptions inspect;  // status, list, release, history
    std::string text;        // the help or version text
};

// Throws UsageError with a one-line reason.
Invocation parse_command_line(const std::vector<std::string>& args);

}  // namespace redlock

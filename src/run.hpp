// The run action: take the lock, run the command under it, keep the lock alive, stop the command
// if the lock is lost, release, and report the command's status.
#pragma once

#include "options.hpp"

namespace redlock {

// Returns the process exit status; throws Error for failures before the command started.
int run_command(const RunOptions& options);

}  // namespace redlock

// The --help text: our usage lines for the run and every operator command, CLI11's list of the
// options, then the exit codes.
#pragma once

#include <string>

namespace redlock {

// `generated`: CLI11's help for every option (options_help in option_table.hpp).
std::string help_text(const std::string& generated);

}  // namespace redlock

// What the program says about itself: the --help text (our usage lines for the run and every
// operator command, CLI11's list of the options, then the exit codes) and the --version string.
#pragma once

#include <string>

namespace redlock {

// `generated`: CLI11's help for every option (options_help in option_table.hpp).
std::string help_text(const std::string& generated);

// The version --version prints, fixed at configure time (cmake/version.cmake): the project
// version, plus `git describe` when built from a git checkout. Defined in the source CMake
// generates from version.cpp.in, so that a reconfigure recompiles only that.
const char* version();

}  // namespace redlock

// What the program says about itself: --help (the everyday options, one screen), --help-all
// (every option of the catalog, grouped), each subcommand's --help, and the --version string.
// All of it is written from the option catalog, wrapped at word boundaries to 80 columns.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/option_table.hpp"

namespace redlock {

// The width every help text fits: an 80-column terminal.
inline constexpr std::size_t help_width = 80;

// --help: the usage lines, the everyday options of `catalog`, the exit codes in brief, and a last
// line pointing to --help-all and the man page.
std::string help_text(const std::vector<OptionSpec>& catalog);

// --help-all: every option of `catalog`, the everyday ones first, then by group.
std::string help_all_text(const std::vector<OptionSpec>& catalog);

// `redlock-run SUBCOMMAND --help` for status, list, release or history: its usage, what it does,
// and only the options it takes.
std::string subcommand_help_text(std::string_view subcommand,
                                 const std::vector<OptionSpec>& catalog);

// The version --version prints, fixed at configure time (cmake/version.cmake): the project
// version, plus `git describe` when built from a git checkout. Defined in the source CMake
// generates from version.cpp.in, so that a reconfigure recompiles only that.
const char* version();

}  // namespace redlock

// The operator commands' options (status, list, release, history): --json, --names, --limit,
// --last-runs, --token, --force declared in the option table, then checked, with the common
// options and the operands, into InspectOptions for one command.
#pragma once

#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/common_options.hpp"
#include "cli/option_table.hpp"
#include "cli/scan.hpp"
#include "inspect/inspect.hpp"

namespace redlock {

// The operator commands' own options. Every scan knows them, so "--json status" and "status
// --json" both work and one given to the wrong command gets a clear message.
struct InspectRawOptions {
    bool json = false;
    std::string token;
    bool force = false;
    std::string limit;
    bool last_runs = false;
    bool names = false;
};

void add_inspect_options(OptionTable& t, InspectRawOptions& o);

// `word` is the subcommand as typed, for messages; `operands` the words after it (scan_operands).
// Throws UsageError: a run option or another command's option, a missing or extra operand.
InspectOptions inspect_options(Action action, const std::string& word, const CommonRawOptions& raw,
                               const InspectRawOptions& ir, const Scan& scan,
                               std::vector<std::string> operands);

}  // namespace redlock

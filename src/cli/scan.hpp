// The scan of argv for our own options, before CLI11 sees any: it stops where getopt's "+" mode
// would, so the command's options and a subcommand's operands are never taken for ours.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/option_table.hpp"

namespace redlock {

// Where our options end. Knows which options take a value so that "-t 5s NAME" is not read as
// NAME "5s"; the first word that is neither an option nor an option's value ends the scan.
struct Scan {
    std::vector<std::string> options;  // our option tokens, in order, for CLI11
    std::set<std::string> given;       // long names of options given on the command line
    std::size_t next = 0;              // index of the first word after the options
    bool double_dash = false;          // the scan stopped at "--"
    // Options whose value came from the environment instead (key -> variable), so that a
    // message about a bad value names where the user must fix it.
    std::map<std::string, std::string> from_env;

    // How a message names option `key`: "--ttl", or "REDLOCK_TTL" when the value came from there.
    std::string label(const std::string& key) const;
};

// Scans from `scan.next` to the first word that is not an option or an option's value, or to "--".
// Throws UsageError for an unknown option, a flag given a value, or an option missing its value.
void scan_options(const std::vector<OptionSpec>& catalog, const std::vector<std::string>& args,
                  Scan& scan);

// The words after a subcommand word. Nothing after its NAME is a command to protect from our
// scan, so options may come before or after the operands ("release NAME --token T"); "--" ends
// the options, for a NAME that starts with "-".
std::vector<std::string> scan_operands(const std::vector<OptionSpec>& catalog,
                                       const std::vector<std::string>& args, Scan& scan);

}  // namespace redlock

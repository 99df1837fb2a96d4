// The options of run/job_options.hpp (--once-per, the ledger, --metrics-file, --ping, stuck
// detection):
// declared in the option table, then checked into JobOptions.
#pragma once

#include <set>
#include <string>

#include "cli/option_table.hpp"
#include "cli/scan.hpp"
#include "run/job_options.hpp"

namespace redlock {

struct JobRawOptions {
    std::string once_per;
    std::string slot_offset;
    bool once_per_any_result = false;
    std::string ledger_size;
    bool ledger_busy = false;
    std::string metrics_file;
    std::string heartbeat_file;
    std::string heartbeat_timeout;
    std::string max_renewals;
    std::string ping;
    std::string ping_timeout;
};

void add_job_options(OptionTable& t, JobRawOptions& o);

// Throws UsageError naming the option. `given`: the options given on the command line.
JobOptions job_options(const JobRawOptions& o, const Scan& scan);

}  // namespace redlock

// The options of a run (-t, -w, -E, -c, --on-lost, --permits, --shared, ... and the job options
// of job_options_cli.hpp): declared in the option table, then checked, with the common ones, into
// RunOptions.
#pragma once

#include <string>
#include <vector>

#include "cli/common_options.hpp"
#include "cli/job_options_cli.hpp"
#include "cli/option_table.hpp"
#include "cli/scan.hpp"
#include "run/run.hpp"

namespace redlock {

// The run's own option values, as given, beside the common ones; validated into RunOptions.
struct RawOptions : CommonRawOptions {
    std::string ttl = "30s";
    std::string renew_every;
    std::string wait;
    bool no_wait = false;
    std::string conflict_exit_code = "75";
    std::string shell;
    std::string on_lost = "term";
    std::string kill_after = "10s";
    std::string min_hold;
    std::string restart_guard;
    std::string max_runtime;
    bool syslog = false;
    bool hold_info = false;
    std::string min_replicas = "0";
    std::string replica_timeout = "100ms";
    bool keep_env = false;
    std::string permits = "1";
    bool shared = false;
    bool quiet = false;
    JobRawOptions job;
};

void add_run_options(OptionTable& t, RawOptions& o);

// Throws UsageError naming the option. `command`: what runs under the lock NAME.
RunOptions run_options(const RawOptions& raw, const Scan& scan, std::string name,
                       std::vector<std::string> command);

}  // namespace redlock

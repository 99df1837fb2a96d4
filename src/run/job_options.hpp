// What is recorded about a run and when a run does not go ahead or counts as stuck: --once-per,
// the run ledger, --metrics-file, --ping, --heartbeat-file and --max-renewals. None changes
// anything unless given, except the ledger, which records each run by default.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "lock/ledger/ledger.hpp"
#include "util/clock.hpp"

namespace redlock {

struct JobOptions {
    std::optional<OncePer> once_per;  // --once-per, --slot-offset, --once-per-any-result
    std::size_t ledger_size = ledger_size_default;  // --ledger-size; 0: no ledger
    bool ledger_busy = false;                       // --ledger-busy: record busy runs too
    std::string metrics_file;                       // --metrics-file; empty: none
    std::string heartbeat_file;                     // --heartbeat-file
    std::optional<Millis> heartbeat_timeout;        // --heartbeat-timeout
    std::optional<long long> max_renewals;          // --max-renewals
    std::string ping_url;                           // --ping; empty: none (run/ping.hpp)
    Millis ping_timeout{10'000};                    // --ping-timeout: each ping, retries included
};

}  // namespace redlock

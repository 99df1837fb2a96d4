// The run ledger for people and scripts: `history NAME` and the last-run lines of `status`.
#pragma once

#include <string>

#include "lock/ledger/ledger.hpp"

namespace redlock {

// "2024-05-01 12:00:03 +0200, ran, exit 0, 12s on web-1 (pid 4120, deploy)"
std::string entry_summary(const LedgerEntry& e);

// status's "last run:" and "last ok:" lines; "" when no run is recorded.
std::string last_runs_text(const LastRuns& runs);

}  // namespace redlock

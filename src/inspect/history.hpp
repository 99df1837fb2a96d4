// The run ledger for people and scripts: `history NAME` and the last-run lines of `status`.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "inspect/inspect.hpp"
#include "lock/ledger.hpp"

namespace redlock {

// The newest `limit` entries of the lock's ledger, newest first. A quorum's nodes each hold a
// copy: the entries of every node that answered are merged, each run once.
std::vector<LedgerEntry> read_history(const InspectOptions& options, const LockKeys& keys,
                                      std::size_t limit);

// "2024-05-01 12:00:03 +0200, ran, exit 0, 12s on web-1 (pid 4120, deploy)"
std::string entry_summary(const LedgerEntry& e);

// The last run and the last success (outcome 'ran', exit 0) among the entries the ledger keeps,
// for status and list --last-runs; none when the ledger cannot be read (they answer about the
// lock, not its history; -v says why).
LastRuns last_runs_or_none(Connection& conn, const LockKeys& keys);
// A quorum: the newest of each among the nodes' copies.
LastRuns newest_last_runs(const std::vector<LastRuns>& per_node);
// status's "last run:" and "last ok:" lines; "" when no run is recorded.
std::string last_runs_text(const LastRuns& runs);

}  // namespace redlock

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

// status's "last run" and "last success" lines, from the newest 100 entries; nothing when the
// ledger is empty or cannot be read (status answers about the lock, not its history).
void print_last_runs(Connection& conn, const LockKeys& keys);

// The newest entry that ran and exited 0, or nullptr.
const LedgerEntry* last_success(const std::vector<LedgerEntry>& entries);

}  // namespace redlock

// The run ledger (lock/ledger/ledger.hpp) on one node: a run's record written without a release,
// and the ledger and its last runs read back, each in one round trip through its script.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "lock/ledger/ledger.hpp"
#include "lock/node/keys.hpp"
#include "redis/connection.hpp"

namespace redlock {

// On one node; each is one round trip and throws Error as Connection does.
// Records a run that holds no lock (busy, skipped), or one whose release goes separately.
RecordResult write_record(Connection& conn, const LockKeys& keys, const std::string& token,
                          const RunRecord& record);
// Newest first, at most `limit`.
std::vector<LedgerEntry> read_ledger(Connection& conn, const LockKeys& keys, std::size_t limit);

// The ledger's last run and last success (LastRuns).
LastRuns read_last_runs(Connection& conn, const LockKeys& keys);
// The pure part, for the unit tests.
LastRuns last_runs_from_reply(const Reply& reply, std::string_view key);
// read_last_runs, or none when the ledger cannot be read: status and list --last-runs answer
// about the lock, not its history (-v says why).
LastRuns last_runs_or_none(Connection& conn, const LockKeys& keys);
// The same from last_runs.lua's reply, read in a pipeline with others.
LastRuns last_runs_or_none(const Reply& reply, const LockKeys& keys);
// last_runs.lua's (and history.lua's) KEYS, and last_runs.lua's ARGV, for a pipeline: besides the
// ledger, the holder records that tell an abandoned run (lib/abandoned.lua), which a script must be
// given like every key it reads.
std::vector<std::string> last_runs_keys(const LockKeys& keys);
std::vector<std::string> last_runs_args(const LockKeys& keys);

}  // namespace redlock

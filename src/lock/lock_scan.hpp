// Finding locks by name on one Redis (and every master of a Redis Cluster): SCAN, never KEYS,
// which blocks the server for the whole keyspace. What list reads on each node it asks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "lock/ledger/ledger.hpp"
#include "lock/node/lock_state.hpp"
#include "redis/connection.hpp"

namespace redlock {

// The locks held under `prefix` whose names match the glob `pattern` (the prefix is not part of
// it), sorted by name. Keys that are not lock tokens and locks released since the SCAN are left
// out.
std::vector<LockState> held_locks(Connection& conn, const std::string& prefix,
                                  const std::string& pattern);

// What list reads of one lock: its state and, when asked for, its ledger's last runs.
struct ListedState {
    LockState lock;
    std::optional<LastRuns> runs;
};

// list's reads: the locks held under `prefix` whose names match `pattern`, sorted by name, as
// held_locks finds them. With `last_runs`, each lock's last runs too, read in the same write as
// its state; with `ledgers` > 0 also the locks with a run ledger, held or free (at most that
// many), found by their `:ledger` keys in a SCAN sent beside the one for the lock keys. So
// list --last-runs costs the round trips of a plain list, not one more per lock.
std::vector<ListedState> listed_locks(Connection& conn, const std::string& prefix,
                                      const std::string& pattern, bool last_runs,
                                      std::size_t ledgers);

// The names of the locks ever taken under `prefix` whose names match `pattern`, found by their
// fence counters (a lock's key goes with its release, the counter stays), sorted, at most `max`.
// A name with a control character in it is left out: one a line is the format, and a completion
// could not offer it anyway.
std::vector<std::string> lock_names(Connection& conn, const std::string& prefix,
                                    const std::string& pattern, std::size_t max);

// The names of the locks under `prefix` matching `pattern` that have a run ledger (held or
// free: a free lock has no key, only its companions), found by their `:ledger` keys, as
// lock_names finds them by their fence counters.
std::vector<std::string> ledger_names(Connection& conn, const std::string& prefix,
                                      const std::string& pattern, std::size_t max);

}  // namespace redlock

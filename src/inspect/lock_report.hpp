// How the operator commands show a lock: the JSON object (shared by status and list, so both have
// the same fields) and the pieces of the human form. Every byte that came from Redis goes through
// printable() or the JSON escaper before it is shown.
#pragma once

#include <string>
#include <string_view>

#include "lock/ledger/ledger.hpp"
#include "lock/node/lock_state.hpp"
#include "lock/node/waiters.hpp"
#include "util/json.hpp"

namespace redlock {

// The lock as one JSON object; the field names and types are documented in redlock-run(7)
// (JSON OUTPUT) and must stay stable.
// With `runs` (status; list --last-runs) it also has "last_run" and "last_success": ledger
// entries as history --json writes them, or null.
// With `waiters` (status), also "waiting" and "waiters" (write_waiters_json).
void write_lock_json(JsonWriter& out, const LockState& lock, const LastRuns* runs = nullptr,
                     const Waiters* waiters = nullptr);

// "waiters": the queue in order, each {position, host, pid, since_ms, waiting_ms, mode}
// (status), and "waiting": the queue's length.
void write_waiters_json(JsonWriter& out, const Waiters& waiters);
// status's "waiting:" block, one line a waiter ("  1. web-2 pid 4120, waiting 1m3s, exclusive");
// empty when nobody waits. `from`: the node it was read on, where several decide.
std::string waiters_text(const Waiters& waiters, const std::string& from);
// write_lock_json's fields without the braces, for an object that adds its own beside them.
void write_lock_fields(JsonWriter& out, const LockState& lock);

// One ledger entry as history --json writes it.
void write_entry_json(JsonWriter& out, const LedgerEntry& e);
// "last_run" and "last_success" keys of the object being written.
void write_last_runs_json(JsonWriter& out, const LastRuns& runs);

// The token for people: whole with --verbose, else its first 8 characters and "...".
std::string shown_token(std::string_view token, bool verbose);

// "deploy@web-2 pid 4120", or "unknown" when no holder info was recorded for the current token.
std::string holder_text(const LockState& lock);

// How long the holder has held the lock by Redis's clock ("1m12s"), or "" when unknown.
std::string held_for_text(const LockState& lock);

// Time left: "28.5s", "no expiry" for a key without a TTL, "-" for a free lock.
std::string ttl_text(const LockState& lock);

// A Unix time in ms as local time, "2024-05-01 12:00:03 +0200".
std::string local_time_text(long long unix_ms);

}  // namespace redlock

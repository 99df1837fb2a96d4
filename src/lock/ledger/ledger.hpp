// What a finished run leaves beside its lock: an entry in the run ledger (a capped list of past
// runs, newest first, for `history` and `status`) and, with --once-per, the record of the latest
// schedule slot a run completed. Both are written by the script that releases the lock, in the
// same step, so a waiter that takes the lock next already sees them; the acquire script reads
// the slot record (lock/node/lock.hpp), so neither costs a round trip of its own. Here the data,
// its stored form and a quorum's majority of copies, without I/O; lock/node/ledger_io.hpp reads and
// writes it on a node.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/clock.hpp"

namespace redlock {

// --once-per PERIOD [--slot-offset D] [--once-per-any-result]: a run belongs to the slot
// floor((redis_time - offset) / period); once a run of a slot completed, later runs of the same
// lock in that slot skip.
struct OncePer {
    Millis period{0};
    Millis offset{0};
    bool any_result = false;  // a failed run consumes its slot too
};

// A period shorter than a second is not a schedule; one longer than a year is a typo.
inline constexpr Millis once_period_min{1'000};
inline constexpr Millis once_period_max{366LL * 24 * 3600 * 1000};

// Unix ms of 10000-01-01: far beyond any clock a Redis can report, well inside long long.
inline constexpr long long max_time_ms = 253'402'300'800'000LL;
// Unix ms of 2000-01-01: no run recorded in a ledger ended before it.
inline constexpr long long min_entry_time_ms = 946'684'800'000LL;
// No slot of such a clock lies beyond this (the shortest period is a second).
inline constexpr long long max_slot = max_time_ms / 1000;

// The slot of Unix time `now_ms` (as Redis's clock says it). Throws DataError for a time no
// Redis can report (negative, or beyond the year 10000), UsageError for a policy out of range.
long long slot_of(long long now_ms, const OncePer& p);
// Whether `slot` is one of a real clock's (slot_of 0 to max_time_ms) under `p`: a slot from a
// reply is checked with it, as slot * period overflows for a hostile one.
bool slot_in_range(long long slot, const OncePer& p);
// When `slot` begins, in Unix ms. Throws DataError for a slot not in range.
long long slot_start_ms(long long slot, const OncePer& p);
// How long the slot record is kept: a few periods, so it outlives its slot whatever the offset,
// then expires by itself.
Millis once_record_ttl(const OncePer& p);

// The run that completed a slot.
struct SlotRecord {
    long long slot = 0;
    long long end_ms = 0;  // Redis time when it finished
    std::string host;
    long long pid = 0;
    long long fence = 0;
    std::string outcome;
    std::optional<int> exit_status;
    // Set instead of the fields above when no record is known: the node (re)started this many
    // seconds ago, after the slot began, without the lock's data; its run may have been done
    // before, so the slot is skipped (the restart guard, acquire.lua).
    std::optional<long long> restart_s;
};

// How a run ended, as the ledger names it. killed: redlock-run itself died while its command ran
// (kill -9, a crash); its watchdog stopped the command and handed over (run/handover.hpp).
// abandoned: it died with its watchdog (or the hand-over could not reach Redis), so no end was
// recorded; the next holder, or a reader of the ledger, tells it from the run's holder record
// (lock/scripts/lib/abandoned.lua). No run records it of itself, so all_outcomes (the outcomes
// a run's --metrics-file counts) leaves it out.
enum class Outcome {
    ran,
    busy,
    skipped_slot,
    lost,
    timed_out,
    stuck,
    failed_to_start,
    killed,
    abandoned
};
std::string_view outcome_name(Outcome o);
inline constexpr Outcome all_outcomes[] = {
    Outcome::ran,       Outcome::busy,  Outcome::skipped_slot,    Outcome::lost,
    Outcome::timed_out, Outcome::stuck, Outcome::failed_to_start, Outcome::killed};

struct LedgerEntry {
    long long start_ms = 0;  // Redis time: end minus the duration measured here
    long long end_ms = 0;    // Redis time, when the entry was written
    long long duration_ms = 0;
    std::string outcome;
    std::string host;
    long long pid = 0;
    std::string user;
    std::optional<int> exit_status;  // when the command exited
    std::optional<int> signal;       // when a signal ended it
    long long fence = 0;             // 0: the run never held the lock
    std::string command;             // only with --hold-info
};

// One entry as stored: "field=value" pairs separated by tabs, values with '\\', '\t' and '\n'
// escaped. The script prepends end_ms, start_ms and outcome, which only it knows for sure.
std::string encode_entry(const LedgerEntry& e);
// Unknown fields are ignored, so that entries written by another version still show. Throws
// DataError naming the field for an entry with a number outside its domain (times before 2000 or
// from the year 10000 on, start after end, a negative duration, a pid outside 1..2^31-1, a fence
// outside 0..fence_limit-1, an exit status outside 0..255, a signal outside 1..127), a field
// that is not a number, or no end_ms, start_ms, outcome, duration_ms, pid or fence: the readers
// below leave such an entry out with a warning.
LedgerEntry decode_entry(std::string_view stored);

inline constexpr std::size_t ledger_size_default = 100;
inline constexpr std::size_t ledger_size_max = 10'000;

// What one run asks to be recorded.
struct RunRecord {
    LedgerEntry entry;  // times and outcome are completed by Redis
    Outcome outcome = Outcome::ran;
    bool held = false;            // the run held the lock (token): 'ran' turns 'lost' if gone
    std::size_t ledger_size = 0;  // 0: no ledger entry
    // --once-per: mark `slot` done; when any_result is false only a run that still holds the
    // lock and ran does.
    std::optional<long long> slot;
    long long slot_start_ms = 0;  // when `slot` began (Unix ms), compared across periods
    bool any_result = false;
    Millis once_ttl{0};
};

struct RecordResult {
    long long end_ms = 0;    // Redis time of the write
    bool still_held = true;  // false: the token was gone (the run lost the lock)
    bool slot_written = false;
    std::string problem;  // what kept the entry or the slot from being written ("": nothing)
};

// ledger.lua's ARGV for `record`; `release` is empty (record only) or keep_ms, the wake-up's
// linger and the waiters' key prefix, as release.lua takes them (LockNode::finish).
std::vector<std::string> ledger_script_args(const std::string& token, const RunRecord& record,
                                            const std::vector<std::string>& release);
// `args` followed by the record as record_run (lock/scripts/lib/ledger.lua) reads it, its
// field/value pairs last: the ARGV of the 'finish' operation of permits.lua and shared.lua, which
// release and record in one step (LockNode::finish). A finish judges the run by its token, so
// `record.held` must be set.
std::vector<std::string> with_record_args(std::vector<std::string> args, const RunRecord& record);

// The newest entry of the ledger and the newest success (outcome 'ran', exit 0) among the kept
// entries, for status and list --ledger (read_last_runs, ledger_io.hpp: one round trip).
struct LastRuns {
    std::optional<LedgerEntry> last;
    std::optional<LedgerEntry> last_success;
};

// A quorum: a run writes its entry to every node it reaches, and any one node can be wrong or
// hostile, so an entry counts only when a majority of the nodes hold a copy of it: copies of one
// run agree on what the run sent (host, pid, user, fence, duration, exit status, signal and
// command); the times and the outcome are each node's own. The run is shown once, with the
// outcome most copies give and the median of their times, so that a minority can neither add a
// run nor move one, and decides the outcome only between nodes that disagree.
bool same_run(const LedgerEntry& a, const LedgerEntry& b);
// From each node's last runs (none where a node did not answer): the last run that a majority
// of nodes report as their last, and the last success that a majority report as theirs.
LastRuns majority_last_runs(const std::vector<LastRuns>& per_node, std::size_t majority);
// From each node's ledger (newest first): the runs a majority of nodes hold, newest first, at
// most `limit`.
std::vector<LedgerEntry> majority_history(const std::vector<std::vector<LedgerEntry>>& per_node,
                                          std::size_t majority, std::size_t limit);

}  // namespace redlock

// What a run leaves behind: the ledger entry (with the completed --once-per slot), written in the
// same round trip as the release (LockBackend::finish), and the --metrics-file.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "lock/backend.hpp"
#include "lock/ledger/ledger.hpp"
#include "run/run.hpp"

namespace redlock {

struct FinishedRun {
    Outcome outcome = Outcome::ran;
    bool held = false;  // the run took the lock (the ledger script checks it still holds it)
    long long fence = 0;
    Millis duration{0};              // from the acquire to the command's end, by our clock
    std::optional<int> wait_status;  // the command's, when it ran
    std::optional<long long> slot;   // --once-per: the slot the run belongs to
    std::chrono::system_clock::time_point started{}, ended{};  // for the metrics file
    int exit_code = 0;                                         // what redlock-run exits with
};

// --once-per: "lock 'k': this slot (every 1h, since ...) was already done on host (pid, fence),
// finished ...; not running the command", from the acquire's answer.
std::string slot_done_message(const LockKeys& keys, const OncePer& policy, long long slot,
                              const SlotRecord& done);

// What `run` asks to be recorded (the ledger entry, the slot to mark), or nullopt when nothing
// is (--ledger-size 0 without --once-per, a busy run without --ledger-busy).
std::optional<RunRecord> run_record(const RunOptions& options, const FinishedRun& run);

// Records a run that holds no lock (busy, skipped); a failure is a warning, never an exception.
void record_in_ledger(LockBackend& lock, const RunRecord& record);

// Warns about what finish() could not record (the step failing, a slot left open: with -v only
// when `after_loss`, which explains them). Returns false when Redis found the run's token gone (the
// run lost the lock).
bool check_recorded(const LockKeys& keys, const RunRecord& record, const Release& release,
                    bool after_loss = false);

// A warning, or with `consequence` (of a failure already reported) a -v line: one failure is
// one line on stderr, not one per step it then made fail.
void warn_unless_consequence(bool consequence, const std::string& message);

// --metrics-file; a failure is a warning.
void record_in_metrics(const RunOptions& options, const FinishedRun& run);
// The command has started: --metrics-file's running gauge and last start, so that a run that
// hangs (or whose supervisor dies) shows before it ends. A failure is a warning.
void record_start_in_metrics(const RunOptions& options,
                             std::chrono::system_clock::time_point started);

}  // namespace redlock

// What a run leaves behind: the --once-per check before the command, and after it the ledger
// entry (with the completed slot, one round trip before the release) and the --metrics-file.
#pragma once

#include <chrono>
#include <optional>
#include <string>

#include "lock/backend.hpp"
#include "lock/ledger.hpp"
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

// --once-per, called while holding the lock: the slot this run belongs to, by the lock node's
// clock, and, when a run already completed it, the message saying who did and when.
struct SlotCheck {
    long long slot = 0;
    std::optional<std::string> done_by;
};
SlotCheck check_slot(LockBackend& lock, const OncePer& policy);

// Records `run` in the ledger (and marks its slot done when it qualifies); a failure is a
// warning, never an exception. Returns false when Redis found the run's token gone.
bool record_in_ledger(LockBackend& lock, const RunOptions& options, const std::string& token,
                      const FinishedRun& run);

// --metrics-file; a failure is a warning.
void record_in_metrics(const RunOptions& options, const FinishedRun& run);

}  // namespace redlock

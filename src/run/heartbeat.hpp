// Stuck-job detection: --heartbeat-file FILE --heartbeat-timeout D (the command proves progress
// by touching FILE) and --max-renewals N (a run that needs more renewals than that is stuck).
// The supervise loop asks due() when to look and stuck() whether the command is stuck now.
#pragma once

#include <ctime>
#include <optional>
#include <string>

#include "util/clock.hpp"

namespace redlock {

class StuckDetector {
  public:
    // `start`: when the command started, the first proof of progress. `renew_every` turns
    // --max-renewals into a time: the N+1th renewal would be due at start + (N+1) * every.
    StuckDetector(std::string heartbeat_file, std::optional<Millis> timeout,
                  std::optional<long long> max_renewals, Millis renew_every, Deadline start);

    bool enabled() const { return timeout_.has_value() || renewals_end_.has_value(); }
    // The next moment stuck() may turn true.
    Deadline due() const;
    // Looks at the file; the reason the command is stuck, or "" when it is not (yet).
    std::string stuck(Deadline now);

  private:
    std::string file_;
    std::optional<Millis> timeout_;
    std::optional<Deadline> renewals_end_;
    std::optional<long long> max_renewals_;
    Deadline progress_;              // when we last saw the file's mtime advance
    std::optional<timespec> mtime_;  // the mtime seen then
};

}  // namespace redlock

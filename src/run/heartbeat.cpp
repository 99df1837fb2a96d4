#include "run/heartbeat.hpp"

#include <sys/stat.h>

#include <fmt/format.h>

#include <algorithm>

#include "util/duration.hpp"

namespace redlock {

namespace {

// start + (n + 1) * every, saturated at Deadline::max(): -t 1d --max-renewals 1000000 is ~3
// million years away, beyond a nanosecond time point, and a wrapped sum lay in the past, so the
// run was stopped as stuck at once. A deadline past the clock's range is never reached anyway.
Deadline renewals_deadline(Deadline start, long long n, Millis every) {
    using Nanos = Deadline::duration;
    Nanos room = Deadline::max() - start;
    Nanos period = std::chrono::duration_cast<Nanos>(std::max(every, Millis(1)));
    if (n + 1 > room / period) return Deadline::max();
    return start + (n + 1) * period;
}

}  // namespace

StuckDetector::StuckDetector(std::string heartbeat_file, std::optional<Millis> timeout,
                             std::optional<long long> max_renewals, Millis renew_every,
                             Deadline start)
    : file_(std::move(heartbeat_file)),
      timeout_(timeout),
      max_renewals_(max_renewals),
      progress_(start) {
    if (max_renewals) renewals_end_ = renewals_deadline(start, *max_renewals, renew_every);
    struct stat st {};
    if (timeout_ && ::stat(file_.c_str(), &st) == 0) mtime_ = st.st_mtim;
}

Deadline StuckDetector::due() const {
    Deadline d = Deadline::max();
    if (timeout_) d = progress_ + *timeout_;
    if (renewals_end_) d = std::min(d, *renewals_end_);
    return d;
}

std::string StuckDetector::stuck(Deadline now) {
    if (renewals_end_ && now >= *renewals_end_)
        return fmt::format("still running after {} renewals (--max-renewals)", *max_renewals_);
    if (!timeout_ || now < progress_ + *timeout_) return "";
    // Any change of the mtime counts as progress (a clock stepped back still means a touch).
    struct stat st {};
    if (::stat(file_.c_str(), &st) == 0 &&
        (!mtime_ || st.st_mtim.tv_sec != mtime_->tv_sec || st.st_mtim.tv_nsec != mtime_->tv_nsec)) {
        mtime_ = st.st_mtim;
        progress_ = now;
        return "";
    }
    return fmt::format("the heartbeat file '{}' has not been touched for {} (--heartbeat-timeout)",
                       file_, format_duration(*timeout_));
}

}  // namespace redlock

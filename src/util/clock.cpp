#include "util/clock.hpp"

namespace redlock {
namespace {

class BootTime final : public Clock {
  public:
    Deadline now() override { return BootClock::now(); }
    int poll(pollfd* fds, nfds_t count, Deadline until) override {
        return ::poll(fds, count, until == Deadline::max() ? -1 : millis_until(until));
    }
};

}  // namespace

Clock& boot_clock() {
    static BootTime clock;
    return clock;
}

}  // namespace redlock

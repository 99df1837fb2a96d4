#include "lock/acquisition.hpp"

namespace redlock {

Acquisition acquisition(const LastAttempt& last, const std::function<std::string()>& busy,
                        const std::function<std::string()>& held) {
    Acquisition a;
    a.interrupted_by = last.interrupted_by;
    if (last.interrupted_by) return a;
    a.slot = last.slot;
    if (last.slot_done) {
        a.slot_done = last.slot_done;
        return a;
    }
    if (!last.acquired) {
        a.busy = busy();
        return a;
    }
    a.where = held();
    a.acquired = true;
    a.fence = last.fence;
    a.permit = last.permit;
    a.lease_start = last.lease_start;
    a.lease = last.lease;
    return a;
}

}  // namespace redlock

// The acquire arguments every mode passes alike.
#include "lock/node/lock_mode.hpp"

#include <fmt/format.h>

namespace redlock {

std::string queue_arg(Queueing queueing, long long ticket) {
    if (queueing != Queueing::wait) return std::string();
    return ticket > 0 ? fmt::format("ticket:{}", ticket) : "1";
}

Millis alive_grace(const Connection& conn) {
    return 2 * conn.timeouts().command + Millis(1000);
}

}  // namespace redlock

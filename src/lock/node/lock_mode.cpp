// The acquire arguments every mode passes alike.
#include "lock/node/lock_mode.hpp"

#include <fmt/format.h>

#include "util/errors.hpp"

namespace redlock {

// Only a mode whose acquire_call() or finish_call() gives a call is asked what its reply means.
AcquireResult LockMode::acquire_reply(Connection&, const NodeSettings&, const LockKeys&,
                                      const Reply&) {
    throw Error("internal error: an acquire reply for a mode without acquire_call",
                exit_code::internal);
}

FinishResult LockMode::finish_reply(const LockKeys&, const Reply&) {
    throw Error("internal error: a finish reply for a mode without finish_call",
                exit_code::internal);
}

std::string queue_arg(Queueing queueing, long long ticket) {
    if (queueing != Queueing::wait) return std::string();
    return ticket > 0 ? fmt::format("ticket:{}", ticket) : "1";
}

std::string queue_arg(const NodeSettings& settings, Queueing queueing, long long ticket) {
    // (--once-per never: its slot is judged by the taker's own acquire.) A quorum waiter asks at
    // its ticket (QuorumTarget, quorum_wait.cpp).
    if (queueing == Queueing::wait && settings.hand_off_claim && !settings.once)
        return ticket > 0
                   ? fmt::format("ticket:{}:handoff:{}", ticket, settings.hand_off_claim->count())
                   : fmt::format("handoff:{}", settings.hand_off_claim->count());
    return queue_arg(queueing, ticket);
}

Millis alive_grace(const Connection& conn) {
    return 2 * conn.timeouts().command + Millis(1000);
}

}  // namespace redlock

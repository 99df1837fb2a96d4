#include "lock/lock.hpp"

#include <fmt/format.h>

#include "lock/lock_replies.hpp"
#include "lock/permits.hpp"
#include "lock/scripts.hpp"
#include "util/errors.hpp"

namespace redlock {

bool LockNode::abandon(const LockKeys& keys, const std::string& token) {
    if (permits_ > 1) return abandon_permit(keys, token);
    Reply reply = scripts::abandon().run(conn_, {keys.key, keys.info, keys.wait},
                                         {token, std::to_string(wake_linger.count()), keys.wake},
                                         BootClock::now() + conn_.timeouts().command);
    return abandon_result(reply, keys.key);
}

void LockNode::step_back(const LockKeys& keys, const std::string& token, long long ticket,
                         Millis alive) {
    Reply reply = scripts::abandon().run(conn_, {keys.key, keys.info, keys.wait},
                                         {token, std::to_string(wake_linger.count()), keys.wake,
                                          std::to_string(ticket), std::to_string(alive.count())},
                                         BootClock::now() + conn_.timeouts().command);
    abandon_result(reply, keys.key);
}

void LockNode::leave_queue(const LockKeys& keys, const std::string& token) {
    Reply reply = scripts::abandon().run(
        conn_, {keys.key, keys.info, keys.wait},
        {token, std::to_string(wake_linger.count()), keys.wake, "queue-only"},
        BootClock::now() + conn_.timeouts().command);
    abandon_result(reply, keys.key);
}

AcquireResult LockNode::acquire(const LockKeys& keys, const std::string& token, Millis ttl,
                                const HolderInfo* info, Queueing queueing, long long ticket) {
    if (permits_ > 1) return acquire_permit(keys, token, ttl, info, queueing);
    std::string queue_arg;
    if (queueing == Queueing::wait) queue_arg = ticket > 0 ? fmt::format("ticket:{}", ticket) : "1";
    // A waiter's ':alive' must outlast its block (bounded by the returned TTL) plus the retry
    // that follows it, which a slow server may stretch to a command timeout or two.
    Millis alive_grace = 2 * conn_.timeouts().command + Millis(1000);
    std::vector<std::string> args{
        token,     std::to_string(ttl.count()),         queue_arg,
        keys.wake, std::to_string(alive_grace.count()), std::to_string(no_ttl_recheck.count())};
    if (info) {
        auto fields = info->own_fields();
        args.insert(args.end(), fields.begin(), fields.end());
    }
    Reply reply = scripts::acquire().run(conn_, {keys.key, keys.fence, keys.info, keys.wait}, args,
                                         BootClock::now() + conn_.timeouts().command);
    throw_if_permits_mismatch(reply, keys);  // the name is held with --permits N > 1
    return acquire_result(reply, keys.key);
}

RenewResult LockNode::renew(const LockKeys& keys, const std::string& token, Millis ttl,
                            Deadline deadline) {
    if (permits_ > 1) return renew_permit(keys, token, ttl, deadline);
    conn_.ensure_connected(deadline);
    Reply reply = scripts::renew().run(conn_, {keys.key, keys.info},
                                       {token, std::to_string(ttl.count())}, deadline);
    return renew_result(reply, keys.key);
}

ReleaseResult LockNode::release(const LockKeys& keys, const std::string& token, Millis keep) {
    if (permits_ > 1) return release_permit(keys, token, keep);
    Reply reply = scripts::release().run(
        conn_, {keys.key, keys.info, keys.wait},
        {token, std::to_string(keep.count()), std::to_string(wake_linger.count()), keys.wake},
        BootClock::now() + conn_.timeouts().command);
    return release_result(reply, keys.key);
}

}  // namespace redlock

#include "lock/node/lock.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "lock/node/lock_replies.hpp"
#include "lock/node/permits.hpp"
#include "lock/node/plain_mode.hpp"
#include "lock/node/scripts.hpp"
#include "lock/node/shared.hpp"
#include "util/duration.hpp"

namespace redlock {

std::string restart_guard_text(const AcquireResult& busy, std::string_view where) {
    // The uptime is in whole seconds and the time left is counted from its lower bound (see
    // lib/queue.lua): "restarted 3s ago" and "7s more" are what the node knows.
    return fmt::format(
        "Redis {}restarted {} without this lock's data (no fence counter): a holder from "
        "before may still run, so the lock is held back for {} more (--restart-guard)",
        where.empty() ? std::string() : fmt::format("on {} ", where),
        restarted_ago(busy.restart_uptime_s.value_or(0)),
        format_duration(Millis(std::max(0LL, busy.holder_pttl))));
}

std::string restarted_ago(long long uptime_s) {
    if (uptime_s <= 0) return "under 1s ago";
    return format_duration(std::chrono::seconds(uptime_s)) + " ago";
}

namespace {

std::unique_ptr<LockMode> make_lock_mode(int permits, bool shared) {
    if (permits > 1) return make_permits_mode(permits);
    if (shared) return make_shared_mode();
    return make_plain_mode();
}

}  // namespace

LockNode::LockNode(Connection& conn, int permits, bool shared)
    : conn_(conn), mode_(make_lock_mode(permits, shared)) {}

bool LockNode::abandon(const LockKeys& keys, const std::string& token) {
    return mode_->abandon(conn_, keys, token);
}

void LockNode::step_back(const LockKeys& keys, const std::string& token, long long ticket,
                         Millis alive) {
    mode_->step_back(conn_, keys, token, ticket, alive);
}

void LockNode::leave_queue(const LockKeys& keys, const std::string& token) {
    // abandon.lua in every mode: its queue-only operation touches only the waiters' queue.
    Reply reply = scripts::abandon().run(
        conn_, {keys.key, keys.info, keys.wait},
        {token, std::to_string(wake_linger.count()), keys.wake, "queue-only"},
        conn_.timeouts().command);
    abandon_result(reply, keys.key);
}

void LockNode::settle_permit(const LockKeys& keys, const std::string& token, int permit) {
    mode_->settle_permit(conn_, keys, token, permit);
}

// Called by the Connection on the connection whose set-up failed (a refused AUTH or SELECT, a
// sentinel's master that ROLE shows to be a replica), with the reply of the acquire that went out
// behind it; the set-up's failure is thrown after it, as before. The acquire ran where that
// connection is (database 0, the default user, the writable replica) and may have taken the
// lock, a permit or a shared hold, or queued us: abandon, a compare-and-delete by this run's
// token that also leaves the queue, takes all of it back there, ordered after the acquire
// (Connection::give_back_first says why that is enough). Not when the acquire was refused
// because of the set-up: NOAUTH and NOPERM (the password was needed), READONLY (a read-only
// replica) and NOSCRIPT change nothing. Any other reply, a busy one or an error from inside the
// script, is given back all the same: abandon changes nothing that is not ours.
SetupGiveBack LockNode::setup_give_back(const LockKeys& keys, const std::string& token) {
    return [this, &keys, &token](const Reply& reply) {
        std::string_view error = error_text(*reply);
        for (std::string_view refused : {"NOAUTH", "NOPERM", "READONLY", "NOSCRIPT"})
            if (error.starts_with(refused)) return;
        abandon(keys, token);
    };
}

AcquireResult LockNode::acquire(const LockKeys& keys, const std::string& token, Millis ttl,
                                const HolderInfo* info, Queueing queueing, long long ticket) {
    SetupGiveBack give_back = setup_give_back(keys, token);
    return mode_->acquire(conn_, settings_, keys, token, ttl, info, queueing, ticket, &give_back);
}

RenewResult LockNode::renew(const LockKeys& keys, const std::string& token, Millis ttl,
                            Deadline deadline) {
    return mode_->renew(conn_, keys, token, ttl, deadline);
}

ReleaseResult LockNode::release(const LockKeys& keys, const std::string& token, Millis keep) {
    return mode_->release(conn_, keys, token, keep);
}

FinishResult LockNode::finish(const LockKeys& keys, const std::string& token, Millis keep,
                              const RunRecord& record) {
    return mode_->finish(conn_, keys, token, keep, record);
}

bool LockNode::holds(const LockKeys& keys, const std::string& token) {
    // Judged by what the key holds, not by this node's mode: a nested run asks of its parent.
    Reply reply = conn_.command({"GET", keys.key});
    std::optional<std::string_view> found =
        check(reply, fmt::format("checking the inherited lock '{}' on {}", keys.key, describe()))
            .string();
    if (!found) return false;
    std::string value(*found);
    // A permits lock (--permits N): the parent holds one of the permits, whatever N this nested
    // run was given.
    if (permits_of(value)) return permits_hold(conn_, keys, token);
    // A shared lock: the parent is one of its shared holders, whatever mode this nested run
    // asked for.
    if (value == shared_marker) return shared_holds(conn_, keys, token);
    return value == token;
}

}  // namespace redlock

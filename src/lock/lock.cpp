#include "lock/lock.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "lock/lock_replies.hpp"
#include "lock/permits.hpp"
#include "lock/scripts.hpp"
#include "lock/shared.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"

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

bool LockNode::abandon(const LockKeys& keys, const std::string& token) {
    if (permits_ > 1) return abandon_permit(keys, token);
    if (shared_) return abandon_shared(keys, token);
    Reply reply = scripts::abandon().run(conn_, {keys.key, keys.info, keys.wait},
                                         {token, std::to_string(wake_linger.count()), keys.wake},
                                         conn_.timeouts().command);
    return abandon_result(reply, keys.key);
}

void LockNode::step_back(const LockKeys& keys, const std::string& token, long long ticket,
                         Millis alive) {
    if (permits_ > 1) {
        abandon_permit(keys, token, fmt::format("ticket:{}", ticket), alive);
        return;
    }
    if (shared_) {
        abandon_shared(keys, token, fmt::format("ticket:{}", ticket), alive);
        return;
    }
    Reply reply = scripts::abandon().run(conn_, {keys.key, keys.info, keys.wait},
                                         {token, std::to_string(wake_linger.count()), keys.wake,
                                          std::to_string(ticket), std::to_string(alive.count())},
                                         conn_.timeouts().command);
    abandon_result(reply, keys.key);
}

void LockNode::leave_queue(const LockKeys& keys, const std::string& token) {
    Reply reply = scripts::abandon().run(
        conn_, {keys.key, keys.info, keys.wait},
        {token, std::to_string(wake_linger.count()), keys.wake, "queue-only"},
        conn_.timeouts().command);
    abandon_result(reply, keys.key);
}

// Shared holders keep the lock (a busy reply with 'shared', asked for only by a caller that shows
// the holder): how many, and one of them that recorded its info, from one more read. It is only
// for the message: a read that fails leaves "shared holders" without a number.
void LockNode::describe_shared_holders(const LockKeys& keys, AcquireResult& busy) {
    try {
        PermitsState s = read_shared(conn_, keys);
        busy.shared_holders = static_cast<long long>(s.holders.size());
        for (const PermitHolder& h : s.holders)
            if (h.holder && !h.holder->host.empty()) {
                busy.holder = h.holder;
                break;
            }
    } catch (const Error&) {
    }
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
    if (permits_ > 1) return acquire_permit(keys, token, ttl, info, queueing, ticket);
    if (shared_) return acquire_shared(keys, token, ttl, info, queueing, ticket);
    std::string queue_arg;
    if (queueing == Queueing::wait) queue_arg = ticket > 0 ? fmt::format("ticket:{}", ticket) : "1";
    // A waiter's ':alive' must outlast its block (bounded by the returned TTL) plus the retry
    // that follows it, which a slow server may stretch to a command timeout or two.
    Millis alive_grace = 2 * conn_.timeouts().command + Millis(1000);
    std::vector<std::string> args{
        token,
        std::to_string(ttl.count()),
        queue_arg,
        keys.wake,
        std::to_string(alive_grace.count()),
        std::to_string(no_ttl_recheck.count()),
        once_ ? fmt::format("{}:{}", once_->period.count(), once_->offset.count()) : std::string(),
        busy_holder_ ? "1" : "",
        restart_guard_arg(ttl)};
    if (info) {
        auto fields = info->own_fields();
        args.insert(args.end(), fields.begin(), fields.end());
    }
    std::vector<std::string> script_keys{keys.key, keys.fence, keys.info, keys.wait, keys.ledger};
    if (once_) script_keys.push_back(keys.once);
    SetupGiveBack give_back = setup_give_back(keys, token);
    Reply reply =
        scripts::acquire().run(conn_, script_keys, args, conn_.timeouts().command, &give_back);
    throw_if_permits_mismatch(reply, keys);  // the name is held with --permits N > 1
    AcquireResult result = acquire_result(reply, keys.key);
    if (result.shared) describe_shared_holders(keys, result);
    // A reply without the slot asked for would leave the run without one: not this protocol.
    if (once_ && (result.acquired || result.slot_done) && !result.slot)
        throw RedisError(fmt::format(
            "unexpected reply from the acquire script for lock '{}': no --once-per slot (is this "
            "Redis?)",
            keys.key));
    // Range-checked here, where the policy is known: slot * period of a hostile slot overflows.
    if (once_ && result.slot && !slot_in_range(*result.slot, *once_))
        throw RedisError(fmt::format(
            "unexpected reply from the acquire script for lock '{}': --once-per slot {}, which "
            "no real clock gives for every {} (is this Redis?)",
            keys.key, *result.slot, format_duration(once_->period)));
    return result;
}

RenewResult LockNode::renew(const LockKeys& keys, const std::string& token, Millis ttl,
                            Deadline deadline) {
    if (permits_ > 1) return renew_permit(keys, token, ttl, deadline);
    if (shared_) return renew_shared(keys, token, ttl, deadline);
    conn_.ensure_connected(deadline);
    Reply reply = scripts::renew().run(conn_, {keys.key, keys.info},
                                       {token, std::to_string(ttl.count())}, deadline);
    return renew_result(reply, keys.key);
}

ReleaseResult LockNode::release(const LockKeys& keys, const std::string& token, Millis keep) {
    if (permits_ > 1) return release_permit(keys, token, keep);
    if (shared_) return release_shared(keys, token, keep);
    Reply reply = scripts::release().run(
        conn_, {keys.key, keys.info, keys.wait},
        {token, std::to_string(keep.count()), std::to_string(wake_linger.count()), keys.wake},
        conn_.timeouts().command);
    return release_result(reply, keys.key);
}

FinishResult LockNode::finish(const LockKeys& keys, const std::string& token, Millis keep,
                              const RunRecord& record) {
    // ledger.lua judges and releases a plain lock by its key; a permit or a shared hold lives in
    // keys of its own, which only its protocol's script knows.
    if (permits_ > 1) return finish_permit(keys, token, keep, record);
    if (shared_) return finish_shared(keys, token, keep, record);
    std::vector<std::string> release_args{std::to_string(keep.count()),
                                          std::to_string(wake_linger.count()), keys.wake};
    Reply reply = scripts::ledger().run(
        conn_, {keys.key, keys.ledger, keys.once, keys.info, keys.wait},
        ledger_script_args(token, record, release_args), conn_.timeouts().command);
    return finish_result(reply, keys.key, /*released=*/true);
}

bool LockNode::holds(const LockKeys& keys, const std::string& token) {
    Reply reply = conn_.command({"GET", keys.key});
    std::optional<std::string_view> found =
        check(reply, fmt::format("checking the inherited lock '{}' on {}", keys.key, describe()))
            .string();
    if (!found) return false;
    std::string value(*found);
    // A permits lock (--permits N): the parent holds one of the permits, whatever N this nested
    // run was given.
    if (permits_of(value)) return holds_permit(keys, token);
    // A shared lock: the parent is one of its shared holders, whatever mode this nested run
    // asked for.
    if (value == shared_marker) return holds_shared(keys, token);
    return value == token;
}

}  // namespace redlock

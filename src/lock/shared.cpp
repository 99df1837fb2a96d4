// The shared protocol against one node (LockNode built shared) and the operator's reads of a
// shared lock. Every step is one call of shared.lua, which does it atomically.
#include "lock/shared.hpp"

#include <fmt/format.h>

#include "lock/lock.hpp"
#include "lock/lock_replies.hpp"
#include "lock/scripts.hpp"
#include "util/errors.hpp"

namespace redlock {
namespace {

// Runs one operation of shared.lua; KEYS and the first ARGV are the same for all of them (the
// ledger's keys and the set of open runs too: an acquire may record an abandoned run).
Reply run_shared(Connection& conn, const LockKeys& keys, std::string_view op,
                 std::vector<std::string> args, ScriptTime time,
                 const SetupGiveBack* give_back = nullptr) {
    std::vector<std::string> argv{std::string(op), shared_record_prefix(keys), keys.wake,
                                  std::to_string(wake_linger.count())};
    argv.insert(argv.end(), std::make_move_iterator(args.begin()),
                std::make_move_iterator(args.end()));
    std::vector<std::string> script_keys{
        keys.key,    keys.fence, keys.wait, shared_holders_key(keys),
        keys.ledger, keys.once,  keys.open};
    return scripts::shared().run(conn, script_keys, argv, time, give_back);
}

}  // namespace

std::string shared_holders_key(const LockKeys& keys) {
    return companion_key(keys.key, "shared");
}

std::string shared_record_prefix(const LockKeys& keys) {
    // companion_key(key, "shared:" + token) == companion_key(key, "shared:") + token for every
    // key shape (see LockKeys::make on the wake-up lists), so the script can name each record.
    return companion_key(keys.key, "shared:");
}

AcquireResult LockNode::acquire_shared(const LockKeys& keys, const std::string& token, Millis ttl,
                                       const HolderInfo* info, Queueing queueing,
                                       long long ticket) {
    // As LockNode::acquire: a waiter's ':alive' outlasts its block plus the retry after it.
    Millis alive_grace = 2 * conn_.timeouts().command + Millis(1000);
    std::string queue_arg;
    if (queueing == Queueing::wait) queue_arg = ticket > 0 ? fmt::format("ticket:{}", ticket) : "1";
    std::vector<std::string> args{token,
                                  std::to_string(ttl.count()),
                                  queue_arg,
                                  std::to_string(alive_grace.count()),
                                  std::to_string(no_ttl_recheck.count()),
                                  restart_guard_arg(ttl)};
    if (info) {
        auto fields = info->own_fields();
        args.insert(args.end(), fields.begin(), fields.end());
    }
    SetupGiveBack give_back = setup_give_back(keys, token);  // lock.cpp
    Reply reply =
        run_shared(conn_, keys, "acquire", std::move(args), conn_.timeouts().command, &give_back);
    throw_if_permits_mismatch(reply, keys);
    AcquireResult result = acquire_result(reply, keys.key);
    result.holder.reset();  // the busy reply carries no holder info
    return result;
}

RenewResult LockNode::renew_shared(const LockKeys& keys, const std::string& token, Millis ttl,
                                   Deadline deadline) {
    conn_.ensure_connected(deadline);
    Reply reply = run_shared(conn_, keys, "renew", {token, std::to_string(ttl.count())}, deadline);
    return renew_result(reply, keys.key);
}

ReleaseResult LockNode::release_shared(const LockKeys& keys, const std::string& token,
                                       Millis keep) {
    Reply reply = run_shared(conn_, keys, "release", {token, std::to_string(keep.count())},
                             conn_.timeouts().command);
    return release_result(reply, keys.key);
}

FinishResult LockNode::finish_shared(const LockKeys& keys, const std::string& token, Millis keep,
                                     const RunRecord& record) {
    std::vector<std::string> args = with_record_args({token, std::to_string(keep.count())}, record);
    Reply reply = run_shared(conn_, keys, "finish", std::move(args), conn_.timeouts().command);
    return finish_result(reply, keys.key, /*released=*/true);
}

bool LockNode::abandon_shared(const LockKeys& keys, const std::string& token,
                              const std::string& mode, Millis alive) {
    Reply reply = run_shared(conn_, keys, "abandon", {token, mode, std::to_string(alive.count())},
                             conn_.timeouts().command);
    return abandon_result(reply, keys.key);
}

bool LockNode::holds_shared(const LockKeys& keys, const std::string& token) {
    Reply reply = run_shared(conn_, keys, "holds", {token}, conn_.timeouts().command);
    ReplyView r = check(reply, fmt::format("checking the inherited lock '{}'", keys.key));
    return r.integer(1, 1).has_value();
}

PermitsState read_shared(Connection& conn, const LockKeys& keys) {
    PermitsState s = holders_status(run_shared(conn, keys, "status", {}, conn.timeouts().command),
                                    keys, "shared");
    s.shared = s.permits == 1;  // shared.lua's first element is the marker, not a number
    s.permits = 0;
    return s;
}

std::vector<PermitHolder> force_release_shared(Connection& conn, const LockKeys& keys) {
    return removed_holders(run_shared(conn, keys, "force", {}, conn.timeouts().command), keys,
                           "shared");
}

}  // namespace redlock

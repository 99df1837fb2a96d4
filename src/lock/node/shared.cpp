// The shared protocol against one node (SharedMode, a LockNode built shared) and the operator's
// reads of a shared lock. Every step is one call of shared.lua, which does it atomically.
#include "lock/node/shared.hpp"

#include <fmt/format.h>

#include "lock/node/lock_replies.hpp"
#include "lock/node/scripted_mode.hpp"
#include "lock/node/scripts.hpp"
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
    // The plain lock's holder info too: a release may hand the free lock to a waiting writer.
    std::vector<std::string> script_keys{
        keys.key,    keys.fence, keys.wait, shared_holders_key(keys),
        keys.ledger, keys.once,  keys.open, keys.info};
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

namespace {

class SharedMode final : public ScriptedMode {
  public:
    AcquireResult acquire(Connection& conn, const NodeSettings& settings, const LockKeys& keys,
                          const std::string& token, Millis ttl, const HolderInfo* info,
                          Queueing queueing, long long ticket,
                          const SetupGiveBack* give_back) override {
        std::vector<std::string> args{token,
                                      std::to_string(ttl.count()),
                                      queue_arg(settings, queueing, ticket),
                                      std::to_string(alive_grace(conn).count()),
                                      std::to_string(no_ttl_recheck.count()),
                                      settings.restart_guard_arg(ttl)};
        Reply reply = acquire_op(conn, keys, std::move(args), info, give_back);
        throw_if_permits_mismatch(reply, keys);
        AcquireResult result = acquire_result(reply, keys.key);
        result.holder.reset();  // the busy reply carries no holder info
        return result;
    }

    RenewResult renew(Connection& conn, const LockKeys& keys, const std::string& token, Millis ttl,
                      Deadline deadline) override {
        conn.ensure_connected(deadline);
        Reply reply =
            run_shared(conn, keys, "renew", {token, std::to_string(ttl.count())}, deadline);
        return renew_result(reply, keys.key);
    }

    ReleaseResult release(Connection& conn, const LockKeys& keys, const std::string& token,
                          Millis keep) override {
        Reply reply = run_shared(conn, keys, "release", {token, std::to_string(keep.count())},
                                 conn.timeouts().command);
        return release_result(reply, keys.key);
    }

    FinishResult finish(Connection& conn, const LockKeys& keys, const std::string& token,
                        Millis keep, const RunRecord& record) override {
        return finish_op(conn, keys, {token, std::to_string(keep.count())}, record);
    }

    void settle_permit(Connection&, const LockKeys&, const std::string&, int) override {}

    HeldKeys held_keys(const LockKeys& keys, const std::string& token, int) const override {
        // A shared holder's record (a hash naming its token) lasts as long as its hold.
        std::string record = shared_record_prefix(keys) + token;
        return {record, record};
    }

    int permits() const override { return 1; }
    bool shared() const override { return true; }

  private:
    Reply run_op(Connection& conn, const LockKeys& keys, std::string_view op,
                 std::vector<std::string> args, ScriptTime time,
                 const SetupGiveBack* give_back) const override {
        return run_shared(conn, keys, op, std::move(args), time, give_back);
    }
};

}  // namespace

std::unique_ptr<LockMode> make_shared_mode() {
    return std::make_unique<SharedMode>();
}

bool shared_holds(Connection& conn, const LockKeys& keys, const std::string& token) {
    Reply reply = run_shared(conn, keys, "holds", {token}, conn.timeouts().command);
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

// The plain lock's steps against one node: each one call of its script.
#include "lock/node/plain_mode.hpp"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "lock/node/lock_replies.hpp"
#include "lock/node/permits.hpp"
#include "lock/node/scripts.hpp"
#include "lock/node/shared.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"

namespace redlock {
namespace {

// Shared holders keep the lock (a busy reply with 'shared', asked for only by a caller that shows
// the holder): how many, and one of them that recorded its info, from one more read. It is only
// for the message: a read that fails leaves "shared holders" without a number.
void describe_shared_holders(Connection& conn, const LockKeys& keys, AcquireResult& busy) {
    try {
        PermitsState s = read_shared(conn, keys);
        busy.shared_holders = static_cast<long long>(s.holders.size());
        for (const PermitHolder& h : s.holders)
            if (h.holder && !h.holder->host.empty()) {
                busy.holder = h.holder;
                break;
            }
    } catch (const Error&) {
    }
}

class PlainMode final : public LockMode {
  public:
    AcquireResult acquire(Connection& conn, const NodeSettings& settings, const LockKeys& keys,
                          const std::string& token, Millis ttl, const HolderInfo* info,
                          Queueing queueing, long long ticket,
                          const SetupGiveBack* give_back) override {
        ScriptCall call = *acquire_call(conn, settings, keys, token, ttl, info, queueing, ticket);
        Reply reply =
            call.script->run(conn, call.keys, call.args, conn.timeouts().command, give_back);
        return acquire_reply(conn, settings, keys, reply);
    }

    std::optional<ScriptCall> acquire_call(const Connection& conn, const NodeSettings& settings,
                                           const LockKeys& keys, const std::string& token,
                                           Millis ttl, const HolderInfo* info, Queueing queueing,
                                           long long ticket) const override {
        const std::optional<OncePer>& once = settings.once;
        std::vector<std::string> args{
            token,
            std::to_string(ttl.count()),
            queue_arg(settings, queueing, ticket),
            keys.wake,
            std::to_string(alive_grace(conn).count()),
            std::to_string(no_ttl_recheck.count()),
            once ? fmt::format("{}:{}", once->period.count(), once->offset.count()) : std::string(),
            settings.busy_holder ? "1" : "",
            settings.restart_guard_arg(ttl),
            settings.fence_floor ? std::to_string(*settings.fence_floor) : std::string()};
        if (info) {
            auto fields = info->own_fields();
            args.insert(args.end(), fields.begin(), fields.end());
        }
        std::vector<std::string> script_keys{keys.key, keys.fence, keys.info, keys.wait,
                                             keys.ledger};
        if (once) script_keys.push_back(keys.once);
        return ScriptCall{&scripts::acquire(), std::move(script_keys), std::move(args)};
    }

    AcquireResult acquire_reply(Connection& conn, const NodeSettings& settings,
                                const LockKeys& keys, const Reply& reply) override {
        const std::optional<OncePer>& once = settings.once;
        throw_if_permits_mismatch(reply, keys);  // the name is held with --permits N > 1
        AcquireResult result = acquire_result(reply, keys.key);
        if (result.shared) describe_shared_holders(conn, keys, result);
        // A reply without the slot asked for would leave the run without one: not this protocol.
        if (once && (result.acquired || result.slot_done) && !result.slot)
            throw RedisError(fmt::format(
                "unexpected reply from the acquire script for lock '{}': no --once-per slot (is "
                "this Redis?)",
                keys.key));
        // Range-checked here, where the policy is known: slot * period of a hostile slot overflows.
        if (once && result.slot && !slot_in_range(*result.slot, *once))
            throw RedisError(fmt::format(
                "unexpected reply from the acquire script for lock '{}': --once-per slot {}, which "
                "no real clock gives for every {} (is this Redis?)",
                keys.key, *result.slot, format_duration(once->period)));
        return result;
    }

    RenewResult renew(Connection& conn, const LockKeys& keys, const std::string& token, Millis ttl,
                      Deadline deadline) override {
        conn.ensure_connected(deadline);
        Reply reply = scripts::renew().run(conn, {keys.key, keys.info},
                                           {token, std::to_string(ttl.count())}, deadline);
        return renew_result(reply, keys.key);
    }

    ReleaseResult release(Connection& conn, const LockKeys& keys, const std::string& token,
                          Millis keep) override {
        // The fence counter and the ledger: the free lock may be handed to the queue's head;
        // the shared holders and the open runs: to the readers at its head (lib/share.lua).
        Reply reply = scripts::release().run(
            conn,
            {keys.key, keys.info, keys.wait, keys.fence, keys.ledger, shared_holders_key(keys),
             keys.open},
            {token, std::to_string(keep.count()), std::to_string(wake_linger.count()), keys.wake},
            conn.timeouts().command);
        return release_result(reply, keys.key);
    }

    FinishResult finish(Connection& conn, const LockKeys& keys, const std::string& token,
                        Millis keep, const RunRecord& record) override {
        ScriptCall call = *finish_call(keys, token, keep, record);
        Reply reply = call.script->run(conn, call.keys, call.args, conn.timeouts().command);
        return finish_reply(keys, reply);
    }

    std::optional<ScriptCall> finish_call(const LockKeys& keys, const std::string& token,
                                          Millis keep, const RunRecord& record) const override {
        // ledger.lua judges and releases a plain lock by its key (a permit or a shared hold lives
        // in keys of its own, which only its protocol's script knows).
        std::vector<std::string> release_args{std::to_string(keep.count()),
                                              std::to_string(wake_linger.count()), keys.wake};
        return ScriptCall{&scripts::ledger(),
                          {keys.key, keys.ledger, keys.once, keys.info, keys.wait, keys.fence,
                           shared_holders_key(keys), keys.open},
                          ledger_script_args(token, record, release_args)};
    }

    FinishResult finish_reply(const LockKeys& keys, const Reply& reply) override {
        return finish_result(reply, keys.key, /*released=*/true);
    }

    bool abandon(Connection& conn, const LockKeys& keys, const std::string& token) override {
        Reply reply = scripts::abandon().run(
            conn, {keys.key, keys.info, keys.wait},
            {token, std::to_string(wake_linger.count()), keys.wake}, conn.timeouts().command);
        return abandon_result(reply, keys.key);
    }

    void step_back(Connection& conn, const LockKeys& keys, const std::string& token,
                   long long ticket, Millis alive) override {
        Reply reply =
            scripts::abandon().run(conn, {keys.key, keys.info, keys.wait},
                                   {token, std::to_string(wake_linger.count()), keys.wake,
                                    std::to_string(ticket), std::to_string(alive.count())},
                                   conn.timeouts().command);
        abandon_result(reply, keys.key);
    }

    void settle_permit(Connection&, const LockKeys&, const std::string&, int) override {}

    HeldKeys held_keys(const LockKeys& keys, const std::string&, int) const override {
        return {keys.key, keys.info};
    }

    int permits() const override { return 1; }
    bool shared() const override { return false; }
};

}  // namespace

std::unique_ptr<LockMode> make_plain_mode() {
    return std::make_unique<PlainMode>();
}

}  // namespace redlock

// The product's quorum node: LockNode's protocol over a connection of its own.
#include "lock/quorum/quorum_node.hpp"

#include <fmt/format.h>

#include <functional>
#include <utility>

#include "lock/node/ledger_io.hpp"
#include "lock/node/lock_replies.hpp"
#include "lock/node/scripts.hpp"
#include "util/number.hpp"

namespace redlock {
namespace {

// One script call in steps (ScriptSend) and what its reply means (`decode`, which may throw as
// the synchronous method's reading of it does).
template <class T>
class ScriptNodeCall final : public NodeCall<T> {
  public:
    using Decode = std::function<T(const Reply&)>;
    // `give_back`: an acquire's (LockNode::setup_give_back), kept here while the call is out.
    ScriptNodeCall(Connection& conn, ScriptCall call, Decode decode,
                   SetupGiveBack give_back = nullptr)
        : give_back_(std::move(give_back)),
          decode_(std::move(decode)),
          send_(conn, std::move(call), conn.timeouts().command,
                give_back_ ? &give_back_ : nullptr) {}

    Connection::Waiting waiting() const override { return send_.waiting(); }
    bool sent_all() const override { return send_.sent_all(); }
    std::optional<T> step() override {
        std::optional<Reply> reply = send_.step();
        if (!reply) return std::nullopt;
        return decode_(*reply);
    }
    T finish() override { return decode_(send_.finish()); }
    void abort() override { send_.abort(); }

  private:
    SetupGiveBack give_back_;
    Decode decode_;
    ScriptSend send_;  // last: it goes out when built, with the members above in place
};

ScriptCall raise_fence_call(const HeldKeys& held, const LockKeys& keys, const std::string& token,
                            long long fence) {
    return {
        &scripts::raise_fence(), {held.key, keys.fence, held.info}, {token, std::to_string(fence)}};
}

bool fence_raised(const Reply& reply) {
    return check(reply, "raising the fence").integer(1, 1).has_value();
}

class RedisQuorumNode final : public QuorumNode {
  public:
    RedisQuorumNode(const Endpoint& endpoint, Timeouts timeouts, int permits, bool shared)
        : conn_(endpoint, timeouts), node_(conn_, permits, shared) {}

    std::string describe() const override { return conn_.endpoint().describe(); }
    void set_cancel_fd(int fd) override { conn_.set_cancel_fd(fd); }
    Timeouts timeouts() const override { return conn_.timeouts(); }
    void set_timeouts(Timeouts timeouts) override { conn_.set_timeouts(timeouts); }
    void ensure_connected() override { conn_.ensure_connected(); }

    AcquireResult acquire(const LockKeys& keys, const std::string& token, Millis ttl,
                          const HolderInfo* info, const NodeAcquire& how) override {
        apply(how);
        AcquireResult r = node_.acquire(keys, token, ttl, info, queueing(how), how.ticket);
        // A node whose replicas do not have the lock does not count (its key is given back
        // with the rest when the attempt fails, or at release).
        if (r.acquired && how.replicas.enabled())
            confirm_replicated(conn_, how.replicas,
                               fmt::format("the acquire of lock '{}'", keys.key), Deadline::max());
        return r;
    }

    std::unique_ptr<NodeCall<AcquireResult>> start_acquire(const LockKeys& keys,
                                                           const std::string& token, Millis ttl,
                                                           const HolderInfo* info,
                                                           const NodeAcquire& how) override {
        if (!conn_.sends_in_steps() || how.replicas.enabled()) return nullptr;
        apply(how);
        std::optional<ScriptCall> call =
            node_.acquire_call(keys, token, ttl, info, queueing(how), how.ticket);
        if (!call) return nullptr;
        // The give-back refers to the keys and the token: kept with it.
        auto held = std::make_shared<const std::pair<LockKeys, std::string>>(keys, token);
        SetupGiveBack undo = node_.setup_give_back(held->first, held->second);
        return std::make_unique<ScriptNodeCall<AcquireResult>>(
            conn_, std::move(*call),
            [this, keys](const Reply& reply) { return node_.acquire_reply(keys, reply); },
            [held, undo](const Reply& reply) { undo(reply); });
    }

    bool raise_fence(const LockKeys& keys, const std::string& token, long long fence,
                     int permit) override {
        // What holds our token on this node: the lock key, permit i's key or a shared record.
        ScriptCall call =
            raise_fence_call(node_.held_keys(keys, token, permit), keys, token, fence);
        return fence_raised(
            call.script->run(conn_, call.keys, call.args, conn_.timeouts().command));
    }
    std::unique_ptr<NodeCall<bool>> start_raise_fence(const LockKeys& keys,
                                                      const std::string& token, long long fence,
                                                      int permit) override {
        if (!conn_.sends_in_steps()) return nullptr;
        return std::make_unique<ScriptNodeCall<bool>>(
            conn_, raise_fence_call(node_.held_keys(keys, token, permit), keys, token, fence),
            fence_raised);
    }

    RenewResult renew(const LockKeys& keys, const std::string& token, Millis ttl, Deadline deadline,
                      const ReplicaPolicy& replicas) override {
        RenewResult r = node_.renew(keys, token, ttl, deadline);
        if (r == RenewResult::renewed && replicas.enabled())
            confirm_replicated(conn_, replicas, fmt::format("the renewal of lock '{}'", keys.key),
                               deadline);
        return r;
    }

    ReleaseResult release(const LockKeys& keys, const std::string& token, Millis keep) override {
        return node_.release(keys, token, keep);
    }
    FinishResult finish(const LockKeys& keys, const std::string& token, Millis keep,
                        const RunRecord& record) override {
        return node_.finish(keys, token, keep, record);
    }
    std::unique_ptr<NodeCall<FinishResult>> start_finish(const LockKeys& keys,
                                                         const std::string& token, Millis keep,
                                                         const RunRecord& record) override {
        if (!conn_.sends_in_steps()) return nullptr;
        std::optional<ScriptCall> call = node_.finish_call(keys, token, keep, record);
        if (!call) return nullptr;
        return std::make_unique<ScriptNodeCall<FinishResult>>(
            conn_, std::move(*call),
            [this, keys](const Reply& reply) { return node_.finish_reply(keys, reply); });
    }
    void step_back(const LockKeys& keys, const std::string& token, long long ticket,
                   Millis alive) override {
        node_.step_back(keys, token, ticket, alive);
    }
    void leave_queue(const LockKeys& keys, const std::string& token) override {
        node_.leave_queue(keys, token);
    }
    void settle_permit(const LockKeys& keys, const std::string& token, int permit) override {
        node_.settle_permit(keys, token, permit);
    }
    bool abandon(const LockKeys& keys, const std::string& token) override {
        return node_.abandon(keys, token);
    }

    NodeWake await_wake(const LockKeys& keys, const std::string& token, Millis block) override {
        Reply r = conn_.command(
            {"BLPOP", keys.wake_key(token), fmt::format("{:.3f}", block.count() / 1000.0)},
            BootClock::now() + block + conn_.timeouts().command);
        ReplyView reply = check(r, fmt::format("waiting for lock '{}'", keys.key));
        NodeWake w;
        if (reply.is_nil()) {
            w.timed_out = true;
            return w;
        }
        // 'handoff:<fence>' (lib/take.lua); anything else is a plain wake-up. A fence out of
        // range is no hand-off the quorum can use: the next attempt confirms instead.
        std::optional<std::string_view> pushed =
            reply.size() == 2 ? reply[1].string() : std::nullopt;
        if (pushed && pushed->starts_with("handoff:"))
            w.handed = parse_integer(pushed->substr(8), 1, fence_limit - 1);
        return w;
    }

    RecordResult record(const LockKeys& keys, const std::string& token,
                        const RunRecord& record) override {
        return write_record(conn_, keys, token, record);
    }

    bool holds(const LockKeys& keys, const std::string& token) override {
        return node_.holds(keys, token);
    }

    Connection& connection() override { return conn_; }

  private:
    // What every acquire of the attempt sends along, as LockNode's settings.
    void apply(const NodeAcquire& how) {
        node_.set_once_per(how.once);
        node_.set_busy_holder(how.busy_holder);
        node_.set_wanted_permit(how.wanted_permit);
        node_.set_restart_guard(how.restart_guard);
        node_.set_hand_off(how.hand_off_claim);
        node_.set_fence_floor(how.fence_floor);
    }
    static Queueing queueing(const NodeAcquire& how) {
        return how.ticket > 0 ? Queueing::wait : Queueing::none;
    }

    Connection conn_;
    LockNode node_;
};

}  // namespace

std::unique_ptr<QuorumNode> make_redis_node(const Endpoint& endpoint, Timeouts timeouts,
                                            int permits, bool shared) {
    return std::make_unique<RedisQuorumNode>(endpoint, timeouts, permits, shared);
}

}  // namespace redlock

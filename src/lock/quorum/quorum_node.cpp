// The product's quorum node: LockNode's protocol over a connection of its own.
#include "lock/quorum/quorum_node.hpp"

#include <fmt/format.h>

#include "lock/node/ledger_io.hpp"
#include "lock/node/lock_replies.hpp"
#include "lock/node/scripts.hpp"
#include "util/number.hpp"

namespace redlock {
namespace {

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
        node_.set_once_per(how.once);
        node_.set_busy_holder(how.busy_holder);
        node_.set_wanted_permit(how.wanted_permit);
        node_.set_restart_guard(how.restart_guard);
        node_.set_hand_off(how.hand_off_claim);
        AcquireResult r = node_.acquire(
            keys, token, ttl, info, how.ticket > 0 ? Queueing::wait : Queueing::none, how.ticket);
        // A node whose replicas do not have the lock does not count (its key is given back
        // with the rest when the attempt fails, or at release).
        if (r.acquired && how.replicas.enabled())
            confirm_replicated(conn_, how.replicas,
                               fmt::format("the acquire of lock '{}'", keys.key), Deadline::max());
        return r;
    }

    bool raise_fence(const LockKeys& keys, const std::string& token, long long fence,
                     int permit) override {
        // What holds our token on this node: the lock key, permit i's key or a shared record.
        HeldKeys held = node_.held_keys(keys, token, permit);
        Reply r =
            scripts::raise_fence().run(conn_, {held.key, keys.fence, held.info},
                                       {token, std::to_string(fence)}, conn_.timeouts().command);
        return check(r, "raising the fence").integer(1, 1).has_value();
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
    Connection conn_;
    LockNode node_;
};

}  // namespace

std::unique_ptr<QuorumNode> make_redis_node(const Endpoint& endpoint, Timeouts timeouts,
                                            int permits, bool shared) {
    return std::make_unique<RedisQuorumNode>(endpoint, timeouts, permits, shared);
}

}  // namespace redlock

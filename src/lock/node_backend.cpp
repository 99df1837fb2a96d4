// The lock on one Redis master: plain, TLS, unix socket, Sentinel or Cluster, which differ only
// below the Connection. The protocol per node is LockNode's; this adds the waiters' queue
// (waiter.hpp), --min-replicas and the release policy.
#include <fmt/format.h>

#include <algorithm>

#include "lock/acquisition.hpp"
#include "lock/backend.hpp"
#include "lock/busy_text.hpp"
#include "lock/node/eviction_check.hpp"
#include "lock/node/holder.hpp"
#include "lock/node/ledger_io.hpp"
#include "lock/node/lock.hpp"
#include "lock/node/permits.hpp"
#include "lock/node/shared.hpp"
#include "lock/waiter.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {
namespace {

// How long a lock handed to a waiter (lib/take.lua) is held for it before it has renewed: what
// a waiter that died after queuing costs the queue behind it. Long enough for the wake-up and
// the first renewal to cross a distant link many times over; short against the usual TTLs.
Millis hand_off_claim(Millis ttl) {
    return std::min(ttl, Millis(5'000));
}

Release release_outcome(ReleaseResult result) {
    switch (result) {
        case ReleaseResult::released:
            break;
        // Either way the lock went away while the command ran, unnoticed by the renewer (data
        // loss in Redis, a deletion between renewals).
        case ReleaseResult::absent:
            return {Release::Outcome::lost,
                    "was gone at release: the command ran without it for a while"};
        case ReleaseResult::not_owner:
            return {Release::Outcome::lost,
                    "was taken over by another holder while the command ran; left it alone"};
    }
    return {};
}

class NodeBackend final : public LockBackend {
  public:
    NodeBackend(const LockKeys& keys, const ConnectionOptions& conn, const ReplicaPolicy& replicas,
                int permits, bool shared)
        : LockBackend(keys),
          conn_(conn.endpoint, conn.timeouts),
          node_(conn_, permits, shared),
          replicas_(replicas),
          verbose_(conn.verbose) {
        conn_.set_home_key(keys.key);  // Redis Cluster: (re)connect straight to the lock's master
    }

    Acquisition acquire(const std::string& token, Millis ttl, const HolderInfo* info, Millis wait,
                        SignalEvents& signals) override {
        if (verbose_) warn_if_evicting(conn_, keys().key);
        node_.set_busy_holder(busy_holder());
        node_.set_restart_guard(restart_guard());
        // --min-replicas confirms an acquire with a WAIT on the taker's own connection, which
        // does not cover a hand-off's writes (made on the releaser's): such a waiter is woken only.
        node_.set_hand_off(replicas_.enabled() ? std::nullopt
                                               : std::optional<Millis>(hand_off_claim(ttl)));
        WaitResult w =
            acquire_waiting(node_, keys(), token, ttl, info, wait, signals, wait_progress());
        const AcquireResult& last = w.last;
        return acquisition(
            {w.interrupted_by, last.slot, last.slot_done, last.acquired, last.fence, last.permit,
             w.lease_start, w.lease},
            [&] {
                if (last.restart_uptime_s)
                    return fmt::format("lock '{}' not taken: {}", keys().key,
                                       restart_guard_text(last, node_.describe()));
                return busy_text(keys(), node_.permits(), node_.shared(), last);
            },
            [&] {
                if (replicas_.enabled()) confirm_acquired(node_, keys(), token, replicas_);
                return "on " + node_.describe();
            });
    }

    // Sentinel: the release (and finish(), record_run()) go to the master the acquire or the
    // last renewal reached, on the same connection, without asking the sentinels again (that was
    // a second sentinel connection and query, a round trip or two to a distant Redis, on every
    // run). A failover is still followed: a master that was demoted answers READONLY, a dead one
    // drops the connection, and either closes it (Connection::command), so the one retry below
    // asks the sentinels and checks the new master's ROLE, as a reconnect always does. This is
    // safe because the release is a compare-and-delete of this run's token: on whatever node it
    // lands it can never delete a lock someone else holds. What is left is the case where the
    // sentinels moved the master since the last look (the acquire, or the renewer's before each
    // renewal) and the old one still takes writes: the release then clears the old master only,
    // and the new master's copy of the key (if it got one) expires by its TTL as a crashed
    // holder's would; the renewer has stopped, so it is not extended. A lock held too long, never
    // two holders: waiters and renewals still ask the sentinels before every attempt, the
    // watchdog and the fences are unchanged.
    Release release(const std::string& token, Millis keep) override {
        for (int attempt = 1;; ++attempt) {
            try {
                return release_outcome(node_.release(keys(), token, keep));
            } catch (const RedisUnavailable& e) {
                // The connection may simply have gone stale during a long run: one fresh try.
                if (attempt < 2) continue;
                return {Release::Outcome::unknown, e.what()};
            } catch (const Error& e) {
                return {Release::Outcome::unknown, e.what()};
            }
        }
    }

    // As release(): on the kept master, the sentinels asked again only when it refuses.
    Release finish(const std::string& token, Millis keep, const RunRecord& record) override {
        std::string record_error;
        for (int attempt = 1; attempt <= 2; ++attempt) {
            try {
                FinishResult f = node_.finish(keys(), token, keep, record);
                Release r = release_outcome(f.release);
                r.recorded = f.record;
                return r;
            } catch (const ReplyLost& e) {
                record_error = e.what();  // it may have been written: not sent again
                break;
            } catch (const RedisUnavailable& e) {
                record_error = e.what();  // a stale connection: one fresh try, as release()
            } catch (const Error& e) {
                record_error = e.what();
                break;
            }
        }
        // The step failed as a whole: the release alone, as release() does it; the record is
        // not sent again (it may have been written, and a second entry would be a lie).
        Release r = release(token, keep);
        r.record_error = record_error;
        return r;
    }

    bool holds(const std::string& token) override { return node_.holds(keys(), token); }

    std::string identity() const override { return redis_identity(conn_.endpoint()); }

    void set_once_per(const std::optional<OncePer>& once) override { node_.set_once_per(once); }

    RecordResult record_run(const std::string& token, const RunRecord& record) override {
        // Like the release that follows: to the kept master; a READONLY from it closes the
        // connection, and the retry reconnects to the master the sentinels name now.
        try {
            return write_record(conn_, keys(), token, record);
        } catch (const ReplyLost&) {
            throw;  // it may have been written: a second entry would be a lie
        } catch (const RedisUnavailable&) {
            // The connection may simply have gone stale during a long run: one fresh try.
            return write_record(conn_, keys(), token, record);
        }
    }

    RenewResult renew(const LockKeys& keys, const std::string& token, Millis ttl,
                      Deadline deadline) override {
        return node_.renew(keys, token, ttl, deadline);
    }
    // Redis started the TTL no earlier than `sent`, so counting from it errs on the safe side.
    Deadline lease_end(Deadline sent, Millis ttl) const override {
        return sent + ttl - lease_margin(ttl);
    }
    void set_cancel_fd(int fd) override { conn_.set_cancel_fd(fd); }
    Millis renew_timeout() const override { return conn_.timeouts().command; }
    void follow_master(Deadline cap) override { conn_.follow_master(cap); }
    void confirm_renewal(Deadline cap) override {
        if (replicas_.enabled())
            confirm_replicated(conn_, replicas_,
                               fmt::format("the renewal of lock '{}'", keys().key), cap);
    }

  private:
    Connection conn_;
    LockNode node_;
    ReplicaPolicy replicas_;
    bool verbose_;
};

}  // namespace

Millis lease_margin(Millis ttl) {
    return ttl / 100 + Millis(10);
}

std::unique_ptr<LockBackend> make_node_backend(const LockKeys& keys, const ConnectionOptions& conn,
                                               const ReplicaPolicy& replicas, int permits,
                                               bool shared) {
    return std::make_unique<NodeBackend>(keys, conn, replicas, permits, shared);
}

std::unique_ptr<LockBackend> make_backend(const LockKeys& keys, const ConnectionOptions& conn,
                                          const ReplicaPolicy& replicas, int permits, bool shared) {
    if (permits > 1 && shared) throw UsageError(shared_permits_refusal);
    if (!conn.quorum.empty()) {
        return make_quorum_backend(keys, conn, replicas, permits, shared);
    }
    return make_node_backend(keys, conn, replicas, permits, shared);
}

}  // namespace redlock

// The operator commands' view of a lock on one Redis master: plain, TLS, unix socket, Sentinel
// or Cluster (they differ only below the Connection), and plain, permits and shared locks.
#include <algorithm>

#include "lock/inspector.hpp"
#include "lock/lock_scan.hpp"
#include "lock/node/eviction_check.hpp"
#include "lock/node/ledger_io.hpp"
#include "lock/node/lock.hpp"
#include "lock/node/lock_replies.hpp"
#include "lock/node/scripts.hpp"
#include "lock/node/shared.hpp"
#include "util/log.hpp"

namespace redlock {

bool has_holders(const LockState& lock) {
    return lock.held() && (permits_of(lock.token) || lock.token == shared_marker);
}

std::optional<PermitsState> holders_of(Connection& conn, const LockState& lock) {
    if (!has_holders(lock)) return std::nullopt;
    if (permits_of(lock.token)) return read_permits(conn, lock.keys);
    return read_shared(conn, lock.keys);
}

namespace {

// list --last-runs reads at most this many ledgers of free locks.
constexpr std::size_t max_ledgers = 10000;

class NodeInspector final : public LockInspector {
  public:
    explicit NodeInspector(const ConnectionOptions& conn) : conn_(conn.endpoint, conn.timeouts) {}

    LockReport status(const LockKeys& keys) override {
        // The four reads (the lock, the eviction policy of its master, its waiters, its last
        // runs) are independent: one write, one round trip, and on a new connection in the
        // set-up's write too (all of them read-only, so a refused AUTH or SELECT cannot make
        // them change anything). Over Redis Cluster the keyless CONFIG GET goes to the lock's
        // master (the home key); over Sentinel all go to the master.
        conn_.set_home_key(keys.key);
        std::vector<Reply> replies = run_read_only(
            conn_,
            {{&scripts::status(), {keys.key, keys.fence, keys.info}, {}},
             {nullptr, {}, eviction_policy_query()},
             {&scripts::waiters(), {keys.wait}, {keys.wake, std::to_string(max_waiters_read)}},
             {&scripts::last_runs(), last_runs_keys(keys), last_runs_args(keys)}},
            BootClock::now() + conn_.timeouts().command);
        LockReport report;
        report.lock = checked_lock_state(keys, replies[0]);
        // After the lock's own reply, as when it was a read of its own; stderr only, so --json
        // output stays clean.
        warn_if_evicting(conn_, replies[1]);
        report.holders = holders_of(conn_, report.lock);
        report.waiters = waiters_or_none(replies[2], keys);
        if (report.holders) {
            report.held = !report.holders->holders.empty();
            return report;
        }
        report.held = report.lock.held();
        report.runs = last_runs_or_none(replies[3], keys);
        return report;
    }

    ListReport list(const std::string& prefix, const std::string& pattern,
                    bool last_runs) override {
        ListReport report;
        // --last-runs is the fleet view: a job that has gone quiet holds nothing, so the locks
        // with a ledger come too, held or free (their state read like the held ones'), each
        // with its last runs read beside its state.
        for (ListedState& found :
             listed_locks(conn_, prefix, pattern, last_runs, last_runs ? max_ledgers : 0)) {
            ListedLock listed;
            // One more round trip per permits or shared lock.
            listed.holders = holders_of(conn_, found.lock);
            listed.runs = std::move(found.runs);
            listed.lock = std::move(found.lock);
            report.locks.push_back(std::move(listed));
        }
        return report;
    }

    std::vector<std::string> names(const std::string& prefix, const std::string& pattern,
                                   std::size_t max) override {
        return lock_names(conn_, prefix, pattern, max);
    }

    ReleaseReport release_token(const LockKeys& keys, const std::string& token) override {
        ReleaseReport report = kind_of(keys);
        LockNode node(conn_, std::max(report.permits, 1), report.shared);
        report.result = node.release(keys, token);
        if (report.result != ReleaseResult::not_owner) return report;
        // Read after the refusal, so only informative: the holder may have changed in between.
        if (report.permits > 0) {
            report.holders_now = read_permits(conn_, keys);
        } else if (report.shared) {
            report.holders_now = read_shared(conn_, keys);
        } else {
            report.lock = read_lock_state(conn_, keys);
            if (!report.lock.held()) report.result = ReleaseResult::absent;
        }
        return report;
    }

    ReleaseReport force_release(const LockKeys& keys) override {
        ReleaseReport report = kind_of(keys);
        if (report.permits > 0 || report.shared) {
            report.removed = report.permits > 0 ? force_release_permits(conn_, keys)
                                                : force_release_shared(conn_, keys);
            report.result =
                report.removed.empty() ? ReleaseResult::absent : ReleaseResult::released;
            return report;
        }
        std::optional<LockState> was = force_release_lock(conn_, keys);
        report.result = was ? ReleaseResult::released : ReleaseResult::absent;
        if (was) report.lock = std::move(*was);
        return report;
    }

    std::vector<LedgerEntry> history(const LockKeys& keys, std::size_t limit) override {
        conn_.set_home_key(keys.key);
        return read_ledger(conn_, keys, limit);
    }

  private:
    // Which protocol releases the lock: a permits lock's key holds the record of N, a shared
    // lock's a marker (its holders are listed apart).
    ReleaseReport kind_of(const LockKeys& keys) {
        ReleaseReport report;
        report.lock.keys = keys;
        if (LockState now = read_lock_state(conn_, keys); now.held()) {
            report.permits = permits_of(now.token).value_or(0);
            report.shared = now.token == shared_marker;
        }
        return report;
    }

    Connection conn_;
};

}  // namespace

std::unique_ptr<LockInspector> make_node_inspector(const ConnectionOptions& conn) {
    return std::make_unique<NodeInspector>(conn);
}

std::unique_ptr<LockInspector> make_inspector(const ConnectionOptions& conn) {
    if (!conn.quorum.empty()) return make_quorum_inspector(conn);
    return make_node_inspector(conn);
}

}  // namespace redlock

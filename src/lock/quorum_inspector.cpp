// The operator commands' view of a Redlock quorum (several -u): every node is asked at once, on
// its persistent worker, and a lock counts as held when one token holds it on a majority, as an
// acquire decides; a partial attempt or a stale key on a minority is not a lock anyone holds.
// Each node's answer is kept in the report, so the output says which nodes hold the key.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "lock/inspector.hpp"
#include "lock/lock_scan.hpp"
#include "lock/node/ledger_io.hpp"
#include "lock/node/scripts.hpp"
#include "lock/node/shared.hpp"
#include "lock/quorum/quorum.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {
namespace {

// What a node's lock key says the lock is: N for a permits lock, -1 for a shared one.
int kind_of(const PermitsState& s) {
    return s.shared ? -1 : s.permits;
}

// A permits lock (--permits N) or a shared lock (--shared) as a quorum decides it, from each
// node's reading (null where a node did not answer or holds neither): the kind that a majority
// recorded, and the holders that hold the same permit (shared: permit 0) with the same token on
// a majority (as an acquire decides; a hold on a minority is an attempt that failed, or one
// being cleaned up). Null when no majority recorded the same kind: then, as far as anyone holds
// it, it is neither.
std::optional<PermitsState> majority_holders(const std::vector<std::optional<PermitsState>>& nodes,
                                             std::size_t majority) {
    std::map<int, std::size_t> records;
    for (const auto& node : nodes)
        if (node && kind_of(*node) != 0) ++records[kind_of(*node)];
    std::optional<PermitsState> out;
    int kind = 0;
    for (const auto& [k, count] : records)
        if (count >= majority) {
            kind = k;
            out.emplace();
            out->permits = std::max(k, 0);
            out->shared = k < 0;
        }
    if (!out) return out;
    std::map<std::pair<int, std::string>, std::size_t> votes;
    for (const auto& node : nodes) {
        if (!node || kind_of(*node) != kind) continue;
        if (out->redis_now_ms == 0) out->redis_now_ms = node->redis_now_ms;
        if (node->fence) out->fence = std::max(out->fence.value_or(0), *node->fence);
        for (const PermitHolder& h : node->holders)
            if (++votes[{h.permit, h.token}] == majority) out->holders.push_back(h);
    }
    std::sort(out->holders.begin(), out->holders.end(),
              [](const PermitHolder& a, const PermitHolder& b) { return a.permit < b.permit; });
    return out;
}

// Each node's bounds. The node timeout keeps an attempt's cost to the lock's validity small; a
// read or an operator's release decides no validity, and must hear a node far away rather than
// report it as not answering. So, with --node-timeout not given, each node is bounded as a single
// node's operator commands are (--connect-timeout, --command-timeout): as the run follows a
// distant node's round trip (QuorumLock::follow), without the failed first attempt it needs to
// measure it. Given, it is kept, and a node that answers after it says so (with_bound).
Timeouts inspector_timeouts(const ConnectionOptions& conn) {
    return conn.node_timeout_given ? quorum_timeouts(conn) : conn.timeouts;
}

class QuorumInspector final : public LockInspector {
  public:
    explicit QuorumInspector(const ConnectionOptions& conn)
        : quorum_(conn.quorum, inspector_timeouts(conn), ReplicaPolicy{}),
          node_timeout_given_(conn.node_timeout_given),
          node_timeout_(conn.node_timeout) {}

    LockReport status(const LockKeys& keys) override {
        const std::size_t n = quorum_.size();
        std::vector<NodeReading> nodes(n);
        std::vector<LastRuns> copies(n);
        std::vector<std::optional<PermitsState>> permits(n);
        std::vector<Waiters> queues(n);
        quorum_.in_parallel([&](std::size_t i) {
            std::optional<NodeError> error = node_failure([&] {
                Connection& conn = quorum_.connection(i);
                // The lock, its last runs and its waiters are independent reads: one write per
                // node (the nodes are asked at once), as a single node's status does.
                std::vector<Reply> replies = run_read_only(
                    conn,
                    {{&scripts::status(), {keys.key, keys.fence, keys.info}, {}},
                     {&scripts::last_runs(), last_runs_keys(keys), last_runs_args(keys)},
                     {&scripts::waiters(),
                      {keys.wait},
                      {keys.wake, std::to_string(max_waiters_read)}}},
                    BootClock::now() + conn.timeouts().command);
                nodes[i].lock = checked_lock_state(keys, replies[0]);
                permits[i] = holders_of(conn, *nodes[i].lock);
                copies[i] = last_runs_or_none(replies[1], keys);
                queues[i] = waiters_or_none(replies[2], keys);
            });
            if (error) nodes[i].error = with_bound(error->message);
        });
        LockReport report;
        report.lock.keys = keys;
        // One node can be wrong or hostile: a last run counts only when a majority of the
        // nodes report it (ledger.hpp).
        report.runs = majority_last_runs(copies, quorum_.majority());
        Agreement& a = report.agreement.emplace();
        a.nodes = n;
        a.majority = quorum_.majority();
        // The token held on the most nodes, and on how many.
        std::map<std::string, std::size_t> votes;
        for (std::size_t i = 0; i < n; ++i) {
            nodes[i].endpoint = quorum_.describe(i);
            if (!nodes[i].lock) continue;
            ++a.answered;
            if (nodes[i].lock->held()) ++votes[nodes[i].lock->token];
        }
        std::string token;
        for (const auto& [t, count] : votes)
            if (count > report.holding) std::tie(token, report.holding) = std::tie(t, count);
        report.held = report.holding >= a.majority;
        if (!report.held && a.answered < a.majority) {
            std::string why;
            for (const NodeReading& node : nodes)
                if (!node.error.empty()) {
                    why = fmt::format("; {}: {}", node.endpoint, node.error);
                    break;
                }
            throw RedisUnavailable(fmt::format(
                "cannot tell whether lock '{}' is held: only {} of {} Redis nodes answered ({} "
                "needed){}",
                keys.key, a.answered, n, a.majority, why));
        }
        if (report.held)
            for (const NodeReading& node : nodes)
                if (node.lock && node.lock->held() && node.lock->token == token) {
                    report.lock = *node.lock;
                    break;
                }
        // Free: status --json still says when the lock was read, by the first answering node.
        if (!report.held)
            for (const NodeReading& node : nodes)
                if (node.lock) {
                    report.lock.redis_now_ms = node.lock->redis_now_ms;
                    break;
                }
        // A permits or shared lock: its key holds the record of N or the shared marker on every
        // node; the holders are its own.
        if (report.held && has_holders(report.lock)) {
            report.holders = majority_holders(permits, a.majority);
            if (report.holders) report.held = !report.holders->holders.empty();
        }
        // The waiters as the first node that answered queues them: every node orders a quorum's
        // waiters by the same tickets, and a waiter joins each node it reaches, so one node's
        // queue is the queue, short of a waiter that has not reached that node (man page).
        for (std::size_t i = 0; i < n; ++i)
            if (nodes[i].lock) {
                report.waiters = std::move(queues[i]);
                report.waiters_from = nodes[i].endpoint;
                break;
            }
        report.per_node = std::move(nodes);
        return report;
    }

    ListReport list(const std::string& prefix, const std::string& pattern,
                    bool last_runs) override {
        const std::size_t n = quorum_.size();
        std::vector<std::vector<LockState>> per_node(n);
        std::vector<std::map<std::string, LastRuns>> runs(n);
        std::vector<std::optional<NodeError>> errors(n);
        quorum_.in_parallel([&](std::size_t i) {
            errors[i] = node_failure([&] {
                Connection& conn = quorum_.connection(i);
                // With --last-runs, each lock's last runs read beside its state.
                for (ListedState& found : listed_locks(conn, prefix, pattern, last_runs, 0)) {
                    if (found.runs) runs[i].emplace(found.lock.keys.key, std::move(*found.runs));
                    per_node[i].push_back(std::move(found.lock));
                }
            });
        });
        ListReport report;
        Agreement& a = report.agreement.emplace();
        a.nodes = n;
        a.majority = quorum_.majority();
        for (std::size_t i = 0; i < n; ++i) {
            if (!errors[i]) {
                ++a.answered;
                continue;
            }
            log::warning("list: node {} did not answer: {}", quorum_.describe(i),
                         with_bound(errors[i]->message));
        }
        if (a.answered < a.majority)
            throw RedisUnavailable(
                fmt::format("cannot list the locks: only {} of {} Redis nodes "
                            "answered ({} needed for a majority){}",
                            a.answered, n, a.majority, first_failure(errors)));
        // By key (hence by name), then by token: how many nodes hold it, its first state, and
        // every copy of its ledger's last runs.
        struct Votes {
            ListedLock listed;
            std::vector<LastRuns> runs;
        };
        std::map<std::string, std::map<std::string, Votes>> votes;
        for (std::size_t i = 0; i < n; ++i)
            for (LockState& lock : per_node[i]) {
                Votes& v = votes[lock.keys.key][lock.token];
                if (auto r = runs[i].find(lock.keys.key); r != runs[i].end())
                    v.runs.push_back(r->second);
                if (v.listed.holding++ == 0) v.listed.lock = std::move(lock);
            }
        for (auto& [key, tokens] : votes)
            for (auto& [token, v] : tokens) {
                if (v.listed.holding < a.majority) continue;
                if (last_runs) v.listed.runs = majority_last_runs(v.runs, a.majority);
                report.locks.push_back(std::move(v.listed));
            }
        // Permits and shared locks: their holders, read from every node (one more round trip
        // each).
        for (ListedLock& listed : report.locks) {
            if (!has_holders(listed.lock)) continue;
            std::vector<std::optional<PermitsState>> holders(n);
            quorum_.in_parallel([&](std::size_t i) {
                node_failure([&] { holders[i] = holders_of(quorum_.connection(i), listed.lock); });
            });
            listed.holders = majority_holders(holders, a.majority);
        }
        return report;
    }

    std::vector<std::string> names(const std::string&, const std::string&, std::size_t) override {
        // The completions ask one node for names (they pass only the first -u).
        throw UsageError("list --names reads one Redis: give one -u URL, not a quorum");
    }

    // Each node through the protocol its lock key says it has (a permits record, or a plain
    // token), as a single node's release does.
    ReleaseReport release_token(const LockKeys& keys, const std::string& token) override {
        return release_everywhere(keys, [&](std::size_t i, NodeReleased& out) {
            Connection& conn = quorum_.connection(i);
            LockState now = read_lock_state(conn, keys);
            int permits = now.held() ? permits_of(now.token).value_or(1) : 1;
            LockNode node(conn, permits, now.held() && now.token == shared_marker);
            out.result = node.release(keys, token);
        });
    }

    ReleaseReport force_release(const LockKeys& keys) override {
        ReleaseReport report = release_everywhere(keys, [&](std::size_t i, NodeReleased& out) {
            Connection& conn = quorum_.connection(i);
            LockState now = read_lock_state(conn, keys);
            if (has_holders(now)) {
                out.removed = now.token == shared_marker ? force_release_shared(conn, keys)
                                                         : force_release_permits(conn, keys);
                out.result = out.removed.empty() ? ReleaseResult::absent : ReleaseResult::released;
                return;
            }
            std::optional<LockState> was = force_release_lock(conn, keys);
            out.result = was ? ReleaseResult::released : ReleaseResult::absent;
            if (was) out.token = was->token;
        });
        // Every holder removed from some node, once: what the operator ended.
        std::set<std::pair<int, std::string>> seen;
        for (const NodeReleased& node : report.per_node)
            for (const PermitHolder& h : node.removed)
                if (seen.emplace(h.permit, h.token).second) report.removed.push_back(h);
        std::sort(report.removed.begin(), report.removed.end(),
                  [](const PermitHolder& a, const PermitHolder& b) { return a.permit < b.permit; });
        return report;
    }

    std::vector<LedgerEntry> history(const LockKeys& keys, std::size_t limit) override {
        const std::size_t n = quorum_.size();
        std::vector<std::vector<LedgerEntry>> per_node(n);
        std::vector<std::optional<NodeError>> errors(n);
        quorum_.in_parallel([&](std::size_t i) {
            errors[i] = node_failure(
                [&] { per_node[i] = read_ledger(quorum_.connection(i), keys, limit); });
        });
        std::size_t answered = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (errors[i]) {
                log::warning("history of lock '{}': {}: {}", keys.key, quorum_.describe(i),
                             with_bound(errors[i]->message));
                continue;
            }
            ++answered;
        }
        // A run wrote its entry to every node it reached, with the duration it measured itself.
        // The node clocks differ, and so can the outcome each node judged by what it held: a
        // node that a slow acquire never reached says "lost" for a run that the majority says
        // "ran". And one node can be wrong or hostile: a run is shown only when a majority of
        // the nodes hold a copy of it, once, with the outcome most of its copies give
        // (ledger.hpp). Fewer nodes than that could show none.
        if (answered < quorum_.majority())
            throw RedisUnavailable(fmt::format(
                "cannot read the history of lock '{}': only {} of {} Redis nodes answered ({} "
                "needed for a majority){}",
                keys.key, answered, n, quorum_.majority(), first_failure(errors)));
        return majority_history(per_node, quorum_.majority(), limit);
    }

  private:
    // Runs `op` on every node at once and reports each node's outcome. Every node is asked,
    // whatever the others answer: a release must not leave the lock on a node that could still
    // make up a majority with others. Released when any node released it.
    template <typename Op>
    ReleaseReport release_everywhere(const LockKeys& keys, const Op& op) {
        const std::size_t n = quorum_.size();
        ReleaseReport report;
        report.lock.keys = keys;
        report.per_node.resize(n);
        quorum_.in_parallel([&](std::size_t i) {
            std::optional<NodeError> error = node_failure([&] { op(i, report.per_node[i]); });
            if (error) report.per_node[i].error = with_bound(error->message);
        });
        Agreement& a = report.agreement.emplace();
        a.nodes = n;
        a.majority = quorum_.majority();
        bool foreign = false;
        for (std::size_t i = 0; i < n; ++i) {
            NodeReleased& node = report.per_node[i];
            node.endpoint = quorum_.describe(i);
            if (!node.result) continue;
            ++a.answered;
            if (*node.result == ReleaseResult::released) report.result = ReleaseResult::released;
            foreign = foreign || *node.result == ReleaseResult::not_owner;
        }
        if (report.result != ReleaseResult::released && foreign)
            report.result = ReleaseResult::not_owner;
        return report;
    }

    // A node that timed out under a --node-timeout given: the message names the option, which
    // is what to raise for a node far away.
    std::string with_bound(std::string message) const {
        if (node_timeout_given_ && message.find("timed out") != std::string::npos)
            message += fmt::format(" (--node-timeout {} bounds each node's connect and command)",
                                   format_duration(node_timeout_));
        return message;
    }

    // "; ENDPOINT: MESSAGE" for the first node that failed, for a message that says why too few
    // answered.
    std::string first_failure(const std::vector<std::optional<NodeError>>& errors) const {
        for (std::size_t i = 0; i < errors.size(); ++i)
            if (errors[i])
                return fmt::format("; {}: {}", quorum_.describe(i), with_bound(errors[i]->message));
        return {};
    }

    QuorumLock quorum_;
    bool node_timeout_given_;
    Millis node_timeout_;
};

}  // namespace

std::unique_ptr<LockInspector> make_quorum_inspector(const ConnectionOptions& conn) {
    return std::make_unique<QuorumInspector>(conn);
}

}  // namespace redlock

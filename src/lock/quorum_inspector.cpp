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
#include "lock/quorum.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {
namespace {

class QuorumInspector final : public LockInspector {
  public:
    explicit QuorumInspector(const ConnectionOptions& conn)
        : quorum_(conn.quorum, quorum_timeouts(conn), ReplicaPolicy{}) {}

    LockReport status(const LockKeys& keys) override {
        const std::size_t n = quorum_.size();
        std::vector<NodeReading> nodes(n);
        std::vector<LastRuns> copies(n);
        quorum_.in_parallel([&](std::size_t i) {
            std::optional<NodeError> error = node_failure([&] {
                nodes[i].lock = read_lock_state(quorum_.connection(i), keys);
                copies[i] = last_runs_or_none(quorum_.connection(i), keys);
            });
            if (error) nodes[i].error = error->message;
        });
        LockReport report;
        report.lock.keys = keys;
        // Every node the run reached holds the entry: the newest of the copies is the last run.
        report.runs = newest_last_runs(copies);
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
        if (!report.held && a.answered < a.majority)
            throw RedisUnavailable(fmt::format(
                "cannot tell whether lock '{}' is held: only {} of {} Redis nodes answered ({} "
                "needed)",
                keys.key, a.answered, n, a.majority));
        if (report.held)
            for (const NodeReading& node : nodes)
                if (node.lock && node.lock->held() && node.lock->token == token) {
                    report.lock = *node.lock;
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
                per_node[i] = held_locks(conn, prefix, pattern);
                if (last_runs)
                    for (const LockState& lock : per_node[i])
                        runs[i].emplace(lock.keys.key, last_runs_or_none(conn, lock.keys));
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
                         errors[i]->message);
        }
        if (a.answered < a.majority)
            throw RedisUnavailable(
                fmt::format("cannot list the locks: only {} of {} Redis nodes "
                            "answered ({} needed for a majority)",
                            a.answered, n, a.majority));
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
                if (last_runs) v.listed.runs = newest_last_runs(v.runs);
                report.locks.push_back(std::move(v.listed));
            }
        return report;
    }

    std::vector<std::string> names(const std::string&, const std::string&, std::size_t) override {
        // The completions ask one node for names (they pass only the first -u).
        throw UsageError("list --names reads one Redis: give one -u URL, not a quorum");
    }

    ReleaseReport release_token(const LockKeys& keys, const std::string& token) override {
        return release_everywhere(keys, [&](std::size_t i, NodeReleased& out) {
            out.result = quorum_.node(i).release(keys, token);
        });
    }

    ReleaseReport force_release(const LockKeys& keys) override {
        return release_everywhere(keys, [&](std::size_t i, NodeReleased& out) {
            std::optional<LockState> was = force_release_lock(quorum_.connection(i), keys);
            out.result = was ? ReleaseResult::released : ReleaseResult::absent;
            if (was) out.token = was->token;
        });
    }

    std::vector<LedgerEntry> history(const LockKeys& keys, std::size_t limit) override {
        const std::size_t n = quorum_.size();
        std::vector<std::vector<LedgerEntry>> per_node(n);
        std::vector<std::optional<NodeError>> errors(n);
        quorum_.in_parallel([&](std::size_t i) {
            errors[i] = node_failure(
                [&] { per_node[i] = read_ledger(quorum_.connection(i), keys, limit); });
        });
        // A run wrote the same entry to every node it reached; only the node clocks differ.
        std::set<std::tuple<std::string, long long, long long, std::string, long long>> seen;
        std::vector<LedgerEntry> out;
        std::size_t answered = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (errors[i]) {
                log::warning("history of lock '{}': {}: {}", keys.key, quorum_.node(i).describe(),
                             errors[i]->message);
                continue;
            }
            ++answered;
            for (LedgerEntry& e : per_node[i])
                if (seen.emplace(e.host, e.pid, e.fence, e.outcome, e.duration_ms).second)
                    out.push_back(std::move(e));
        }
        if (answered == 0)
            throw RedisUnavailable(fmt::format("history of lock '{}': no node answered", keys.key));
        std::stable_sort(out.begin(), out.end(), [](const LedgerEntry& a, const LedgerEntry& b) {
            return a.end_ms > b.end_ms;
        });
        if (out.size() > limit) out.resize(limit);
        return out;
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
            if (error) report.per_node[i].error = error->message;
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

    QuorumLock quorum_;
};

}  // namespace

std::unique_ptr<LockInspector> make_quorum_inspector(const ConnectionOptions& conn) {
    return std::make_unique<QuorumInspector>(conn);
}

}  // namespace redlock

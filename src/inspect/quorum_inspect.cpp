#include "inspect/quorum_inspect.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <map>

#include "inspect/history.hpp"
#include "inspect/lock_report.hpp"
#include "lock/lock_state.hpp"
#include "lock/quorum.hpp"
#include "lock/quorum_math.hpp"
#include "lock/scripts.hpp"
#include "util/errors.hpp"
#include "util/exit_codes.hpp"
#include "util/log.hpp"
#include "util/printable.hpp"

namespace redlock {
namespace {

void say(const std::string& line) {
    std::fputs((line + "\n").c_str(), stdout);
}

struct NodeState {
    std::optional<LockState> lock;
    std::optional<NodeError> error;
    LastRuns runs;  // this node's copy of the ledger
};

// The token held on the most nodes, and on how many.
std::pair<std::string, std::size_t> leading_token(const std::vector<NodeState>& nodes) {
    std::map<std::string, std::size_t> votes;
    for (const NodeState& n : nodes)
        if (n.lock && n.lock->held()) ++votes[n.lock->token];
    std::pair<std::string, std::size_t> best;
    for (const auto& [token, count] : votes)
        if (count > best.second) best = {token, count};
    return best;
}

std::string node_line(const NodeState& n, bool verbose) {
    if (n.error) return fmt::format("unreachable ({})", n.error->message);
    const LockState& l = *n.lock;
    std::string fence = l.fence ? std::to_string(*l.fence) : std::string("-");
    if (!l.held()) return fmt::format("free, fence {}", fence);
    return fmt::format("held, token {}, ttl left {}, fence {}", shown_token(l.token, verbose),
                       ttl_text(l), fence);
}

}  // namespace

int quorum_status_command(const InspectOptions& options) {
    log::set_verbose(options.conn.verbose);
    QuorumLock quorum(options.conn.quorum, quorum_timeouts(options.conn), ReplicaPolicy{});
    LockKeys keys = LockKeys::make(options.name, options.conn.prefix);
    const std::size_t n = quorum.size();
    std::vector<NodeState> nodes(n);
    quorum.in_parallel([&](std::size_t i) {
        nodes[i].error =
            node_failure([&] { nodes[i].lock = read_lock_state(quorum.connection(i), keys); });
        if (!nodes[i].error) nodes[i].runs = last_runs_or_none(quorum.connection(i), keys);
    });
    // Every node the run reached holds the entry: the newest of the copies is the last run.
    std::vector<LastRuns> copies;
    for (const NodeState& s : nodes) copies.push_back(s.runs);
    const LastRuns runs = newest_last_runs(copies);
    std::size_t answered = 0;
    for (const NodeState& s : nodes) answered += s.lock ? 1 : 0;
    auto [token, holding] = leading_token(nodes);
    const bool held = holding >= majority(n);
    if (!held && answered < majority(n))
        throw RedisUnavailable(fmt::format(
            "cannot tell whether lock '{}' is held: only {} of {} Redis nodes answered ({} "
            "needed)",
            keys.key, answered, n, majority(n)));

    if (options.json) {
        JsonWriter json;
        json.begin_object();
        json.key("name").value(keys.name);
        json.key("key").value(keys.key);
        json.key("held").value(held);
        json.key("token");
        if (held)
            json.value(token);
        else
            json.null();
        json.key("nodes").value(static_cast<long long>(n));
        json.key("majority").value(static_cast<long long>(majority(n)));
        json.key("answered").value(static_cast<long long>(answered));
        json.key("holding").value(static_cast<long long>(holding));
        write_last_runs_json(json, runs);
        json.key("per_node").begin_array();
        for (std::size_t i = 0; i < n; ++i) {
            json.begin_object();
            json.key("endpoint").value(quorum.connection(i).endpoint().describe());
            if (nodes[i].error) {
                json.key("error").value(nodes[i].error->message);
            } else {
                json.key("lock");
                write_lock_json(json, *nodes[i].lock);
            }
            json.end_object();
        }
        json.end_array();
        json.end_object();
        say(json.str());
        return held ? exit_code::ok : exit_code::lock_free;
    }

    std::string out;
    auto line = [&](std::string_view label, const std::string& value) {
        out += fmt::format("{:<10}{}\n", fmt::format("{}:", label), value);
    };
    line("name", printable(keys.name));
    line("key", printable(keys.key));
    if (held)
        line("state", fmt::format("held by a majority ({} of {} nodes, {} needed; {} answered)",
                                  holding, n, majority(n), answered));
    else if (holding > 0)
        line("state", fmt::format("not held by a majority (at most {} of {} nodes hold one "
                                  "token, {} needed; {} answered)",
                                  holding, n, majority(n), answered));
    else
        line("state", fmt::format("free ({} of {} nodes answered)", answered, n));
    if (held) line("token", shown_token(token, options.conn.verbose));
    for (std::size_t i = 0; i < n; ++i)
        out += fmt::format("node {}: {}\n", quorum.connection(i).endpoint().describe(),
                           node_line(nodes[i], options.conn.verbose));
    out += last_runs_text(runs);
    std::fputs(out.c_str(), stdout);
    return held ? exit_code::ok : exit_code::lock_free;
}

int quorum_release_command(const InspectOptions& options) {
    log::set_verbose(options.conn.verbose);
    QuorumLock quorum(options.conn.quorum, quorum_timeouts(options.conn), ReplicaPolicy{});
    LockKeys keys = LockKeys::make(options.name, options.conn.prefix);
    const std::size_t n = quorum.size();
    std::vector<std::string> outcome(n);
    std::vector<std::optional<NodeError>> errors(n);
    std::size_t released = 0, foreign = 0;
    std::vector<char> was_released(n, 0), was_foreign(n, 0);
    quorum.in_parallel([&](std::size_t i) {
        errors[i] = node_failure([&] {
            if (options.token) {
                switch (quorum.node(i).release(keys, *options.token)) {
                    case ReleaseResult::released:
                        outcome[i] = "released";
                        was_released[i] = 1;
                        break;
                    case ReleaseResult::absent:
                        outcome[i] = "not held";
                        break;
                    case ReleaseResult::not_owner:
                        outcome[i] = "held by another token; left alone";
                        was_foreign[i] = 1;
                        break;
                }
                return;
            }
            Connection& conn = quorum.connection(i);
            Reply reply =
                scripts::force_release().run(conn, {keys.key, keys.info, keys.wait},
                                             {std::to_string(wake_linger.count()), keys.wake},
                                             BootClock::now() + conn.timeouts().command);
            const redisReply& r = check(reply, fmt::format("force-releasing lock '{}'", keys.key));
            if (r.type != REDIS_REPLY_ARRAY || r.elements < 1 ||
                r.element[0]->type != REDIS_REPLY_INTEGER)
                throw RedisError("unexpected reply from the force_release script");
            if (r.element[0]->integer == 0) {
                outcome[i] = "not held";
                return;
            }
            std::string token = r.elements > 1 && r.element[1]->str
                                    ? std::string(r.element[1]->str, r.element[1]->len)
                                    : std::string();
            outcome[i] =
                fmt::format("released (token {})", shown_token(token, options.conn.verbose));
            was_released[i] = 1;
        });
    });
    std::size_t failed = 0;
    const NodeError* first_error = nullptr;
    for (std::size_t i = 0; i < n; ++i) {
        released += static_cast<std::size_t>(was_released[i]);
        foreign += static_cast<std::size_t>(was_foreign[i]);
        if (errors[i]) {
            ++failed;
            if (!first_error) first_error = &*errors[i];
            outcome[i] = fmt::format("unreachable ({})", errors[i]->message);
        }
        say(fmt::format("node {}: {}", quorum.connection(i).endpoint().describe(), outcome[i]));
    }
    say(fmt::format("lock '{}': released on {} of {} nodes", printable(keys.name), released, n));
    if (failed > 0)
        throw RedisUnavailable(fmt::format(
            "lock '{}' may still be held on {} of {} nodes that did not answer; first error: {}",
            keys.key, failed, n, first_error->message));
    if (options.token && released == 0 && foreign > 0)
        throw NotOwner(fmt::format(
            "lock '{}' is held by another token than {} on {} of {} nodes; "
            "not released",
            printable(keys.name), shown_token(*options.token, options.conn.verbose), foreign, n));
    return exit_code::ok;
}

}  // namespace redlock

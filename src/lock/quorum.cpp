#include "lock/quorum.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "lock/lock_replies.hpp"
#include "lock/quorum_math.hpp"
#include "lock/replicas.hpp"
#include "lock/scripts.hpp"
#include "redis/socket.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {
namespace {

Millis since(Deadline start) {
    return std::chrono::ceil<Millis>(BootClock::now() - start);
}

std::string counts(std::size_t done, std::size_t nodes, std::size_t answered) {
    return fmt::format("{} of {} nodes ({} answered, {} needed)", done, nodes, answered,
                       majority(nodes));
}

}  // namespace

Timeouts quorum_timeouts(const ConnectionOptions& options) {
    return Timeouts{std::min(options.timeouts.connect, options.node_timeout), options.node_timeout};
}

std::optional<NodeError> node_failure(const std::function<void()>& op) {
    try {
        op();
        return std::nullopt;
    } catch (const Error& e) {
        return NodeError{e.what(), e.code()};
    } catch (const Cancelled& e) {
        return NodeError{e.what(), exit_code::unavailable};
    } catch (const std::exception& e) {
        return NodeError{e.what(), exit_code::internal};
    }
}

QuorumLock::QuorumLock(const std::vector<Endpoint>& endpoints, Timeouts per_node,
                       ReplicaPolicy replicas)
    : timeouts_(per_node), replicas_(replicas) {
    for (const Endpoint& ep : endpoints) {
        conns_.push_back(std::make_unique<Connection>(ep, per_node));
        nodes_.push_back(std::make_unique<LockNode>(*conns_.back()));
    }
}

std::size_t QuorumLock::majority() const {
    return redlock::majority(nodes_.size());
}

void QuorumLock::in_parallel(const std::function<void(std::size_t)>& fn) {
    std::vector<std::jthread> threads;
    threads.reserve(nodes_.size());
    for (std::size_t i = 0; i < nodes_.size(); ++i) threads.emplace_back([&fn, i] { fn(i); });
}

void QuorumLock::set_cancel_fd(int fd) {
    for (auto& c : conns_) c->set_cancel_fd(fd);
}

// The Redlock validity: the lock is ours on a majority until `sent` + ttl by their clocks; the
// drift allowance covers clocks running at different rates. Not counted from the reply: a node
// may have set the key as early as `sent`.
Deadline QuorumLock::lease_end(Deadline sent, Millis ttl) const {
    return sent + ttl - clock_drift(ttl);
}

QuorumAttempt QuorumLock::acquire(const LockKeys& keys, const std::string& token, Millis ttl,
                                  const HolderInfo* info) {
    const std::size_t n = nodes_.size();
    QuorumAttempt a;
    a.nodes = n;
    a.started = BootClock::now();
    std::vector<std::optional<AcquireResult>> results(n);
    std::vector<std::optional<NodeError>> errors(n);
    in_parallel([&](std::size_t i) {
        errors[i] = node_failure([&] {
            results[i] = nodes_[i]->acquire(keys, token, ttl, info);
            // A node whose replicas do not have the lock does not count (its key is given back
            // with the rest when the attempt fails, or at release).
            if (results[i]->acquired && replicas_.enabled())
                confirm_replicated(*conns_[i], replicas_,
                                   fmt::format("the acquire of lock '{}'", keys.key),
                                   Deadline::max());
            // The quorum hands out one above the highest counter: that must stay below the
            // limit too (a node refused here counts as failed, and is released below).
            if (results[i]->acquired) checked_fence(results[i]->fence + 1, keys.key);
        });
    });
    long long max_counter = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (errors[i]) {
            if (!a.first_error)
                a.first_error =
                    NodeError{fmt::format("{}: {}", nodes_[i]->describe(), errors[i]->message),
                              errors[i]->code};
            continue;
        }
        ++a.answered;
        if (results[i]->acquired) {
            ++a.accepted;
            max_counter = std::max(max_counter, results[i]->fence);
        } else if (!a.busy || (!a.busy->holder && results[i]->holder)) {
            a.busy = results[i];
        }
    }

    if (quorum_holds(a.accepted, n, ttl, since(a.started))) {
        // Raise the counters of the accepting nodes to one fence above all of theirs. Any later
        // majority shares a node with the majority raised here, and its INCR there exceeds this
        // fence, so fences grow across holders even when a node restarts empty in between.
        long long fence = quorum_fence(max_counter);
        std::vector<char> raised(n, 0);
        in_parallel([&](std::size_t i) {
            if (!results[i] || !results[i]->acquired) return;
            node_failure([&] {
                Reply r = scripts::raise_fence().run(*conns_[i], {keys.key, keys.fence, keys.info},
                                                     {token, std::to_string(fence)},
                                                     BootClock::now() + timeouts_.command);
                const redisReply& reply = check(r, "raising the fence");
                raised[i] = reply.type == REDIS_REPLY_INTEGER && reply.integer == 1;
            });
        });
        auto raised_on = static_cast<std::size_t>(std::count(raised.begin(), raised.end(), 1));
        a.elapsed = since(a.started);
        if (quorum_holds(raised_on, n, ttl, a.elapsed)) {
            a.acquired = true;
            a.fence = fence;
            return a;
        }
        a.why = raised_on < majority()
                    ? fmt::format("the fence could be raised on only {} of {} nodes", raised_on, n)
                    : fmt::format("the attempt took {}, which leaves no validity of the ttl {}",
                                  format_duration(a.elapsed), format_duration(ttl));
    } else if (a.accepted >= majority()) {
        a.elapsed = since(a.started);
        a.why = fmt::format("the attempt took {}, which leaves no validity of the ttl {}",
                            format_duration(a.elapsed), format_duration(ttl));
    }
    a.elapsed = since(a.started);
    // Give back whatever was taken, on every node (also those that did not answer: the command
    // may have reached them anyway), so that the next attempt, ours or another's, finds it free.
    if (a.accepted > 0 || a.answered < n) release(keys, token, Millis(0));
    return a;
}

QuorumRelease QuorumLock::release(const LockKeys& keys, const std::string& token, Millis keep) {
    const std::size_t n = nodes_.size();
    std::vector<std::optional<ReleaseResult>> results(n);
    std::vector<std::optional<NodeError>> errors(n);
    in_parallel([&](std::size_t i) {
        errors[i] = node_failure([&] {
            // A connection that went stale during a long run gets one fresh try.
            try {
                results[i] = nodes_[i]->release(keys, token, keep);
            } catch (const RedisUnavailable&) {
                results[i] = nodes_[i]->release(keys, token, keep);
            }
        });
    });
    QuorumRelease out;
    for (std::size_t i = 0; i < n; ++i) {
        if (errors[i]) {
            ++out.failed;
            if (!out.first_error)
                out.first_error =
                    NodeError{fmt::format("{}: {}", nodes_[i]->describe(), errors[i]->message),
                              errors[i]->code};
            continue;
        }
        switch (*results[i]) {
            case ReleaseResult::released:
                ++out.released;
                break;
            case ReleaseResult::absent:
                ++out.absent;
                break;
            case ReleaseResult::not_owner:
                ++out.not_owner;
                break;
        }
    }
    return out;
}

RenewResult QuorumLock::renew(const LockKeys& keys, const std::string& token, Millis ttl,
                              Deadline deadline) {
    const std::size_t n = nodes_.size();
    Deadline sent = BootClock::now();
    std::vector<std::optional<RenewResult>> results(n);
    std::vector<std::optional<NodeError>> errors(n);
    in_parallel([&](std::size_t i) {
        errors[i] = node_failure([&] {
            results[i] = nodes_[i]->renew(keys, token, ttl, deadline);
            if (*results[i] == RenewResult::renewed && replicas_.enabled())
                confirm_replicated(*conns_[i], replicas_,
                                   fmt::format("the renewal of lock '{}'", keys.key), deadline);
        });
    });
    std::size_t renewed = 0, not_owner = 0, answered = 0;
    const NodeError* first_error = nullptr;
    for (std::size_t i = 0; i < n; ++i) {
        if (errors[i]) {
            if (!first_error) first_error = &*errors[i];
            continue;
        }
        ++answered;
        if (*results[i] == RenewResult::renewed)
            ++renewed;
        else
            ++not_owner;
    }
    Millis elapsed = since(sent);
    if (quorum_holds(renewed, n, ttl, elapsed)) {
        if (renewed < n)
            log::verbose("renewed lock '{}' on {}", keys.key, counts(renewed, n, answered));
        return RenewResult::renewed;
    }
    // Once more nodes deny us than a majority can spare, no retry can bring the lock back.
    if (not_owner > n - majority()) return RenewResult::not_owner;
    // A renewal stopped by the renewer's stop signal must look like one to it.
    if (first_error && first_error->message == Cancelled().what()) throw Cancelled();
    throw RedisUnavailable(fmt::format(
        "renewed on {} in {}{}", counts(renewed, n, answered), format_duration(elapsed),
        first_error ? fmt::format(" (first error: {})", first_error->message) : std::string()));
}

bool QuorumLock::holds(const LockKeys& keys, const std::string& token) {
    const std::size_t n = nodes_.size();
    std::vector<char> held(n, 0);
    in_parallel([&](std::size_t i) {
        node_failure([&] {
            Reply reply = conns_[i]->command({"GET", keys.key});
            const redisReply& r = check(reply, fmt::format("checking lock '{}'", keys.key));
            held[i] = r.type == REDIS_REPLY_STRING && std::string(r.str, r.len) == token;
        });
    });
    return static_cast<std::size_t>(std::count(held.begin(), held.end(), 1)) >= majority();
}

std::string quorum_identity(const std::vector<Endpoint>& endpoints) {
    std::string out;
    for (const Endpoint& ep : endpoints) {
        if (!out.empty()) out += ',';
        out += redis_identity(ep);
    }
    return out;
}

}  // namespace redlock

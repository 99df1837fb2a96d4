#include "lock/quorum.hpp"

#include <fmt/format.h>

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
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

// A node's worker: its connection, used by this thread only, and the operations queued for it.
// The worker outlives the QuorumLock while an operation is still running (a node that does not
// answer): the thread holds it, and the process may exit before that operation ends.
struct QuorumLock::Worker {
    struct Task {
        std::function<void(LockNode&, Connection&)> run;
        std::function<void()> skip;  // the task's turn came after its give-up time
        Deadline give_up;
        int cancel_fd;
    };

    Worker(const Endpoint& endpoint, Timeouts timeouts) : conn(endpoint, timeouts), node(conn) {}

    // The thread starts with every signal blocked, whatever the creating thread's mask: the run
    // reads its signals from a signalfd (SignalEvents), which sees only signals that no thread
    // takes; one taken by a worker (SIGCHLD, whose default is to be ignored) would be lost.
    void start(const std::shared_ptr<Worker>& self) {
        sigset_t all, before;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &before);
        std::thread([self] { self->loop(); }).detach();
        pthread_sigmask(SIG_SETMASK, &before, nullptr);
    }

    // Queues `task`; returns whether the node had not yet answered an earlier one (frozen, cut
    // off, slow). The task calls answered() before it hands its answer over, so a node whose
    // answer decided the last round never counts as lagging in the next.
    bool post(Task task) {
        bool lagging;
        {
            std::lock_guard lock(mutex);
            lagging = unanswered > 0;
            ++unanswered;
            tasks.push_back(std::move(task));
        }
        wake.notify_one();
        return lagging;
    }

    void answered() {
        std::lock_guard lock(mutex);
        --unanswered;
    }

    void stop() {
        {
            std::lock_guard lock(mutex);
            stopping = true;
        }
        wake.notify_one();
    }

    void loop() {
        for (;;) {
            Task task;
            {
                std::unique_lock lock(mutex);
                wake.wait(lock, [this] { return stopping || !tasks.empty(); });
                if (tasks.empty()) return;  // stopping, and nothing left to do
                task = std::move(tasks.front());
                tasks.pop_front();
            }
            if (BootClock::now() >= task.give_up) {
                task.skip();
            } else {
                conn.set_cancel_fd(task.cancel_fd);
                task.run(node, conn);
            }
        }
    }

    Connection conn;
    LockNode node;
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<Task> tasks;
    std::size_t unanswered = 0;  // tasks queued or running whose answer is not handed over yet
    bool stopping = false;
};

namespace {

// What one operation saw on every node, copied out when it was decided: a node that had not
// answered by then has neither a result nor an error.
template <class T>
struct Answers {
    std::vector<std::optional<T>> results;
    std::vector<std::optional<NodeError>> errors;
    std::size_t answered = 0;
};

template <class T>
struct Round {
    explicit Round(std::size_t n) { seen.results.resize(n), seen.errors.resize(n); }
    std::mutex mutex;
    std::condition_variable changed;
    Answers<T> seen;
};

}  // namespace

// When a round of one operation on every node is over. A node that was still busy with an
// earlier command when the round began (frozen, cut off, slow) is not waited for: it answers in
// the background, or its turn comes after `give_up` and nothing is sent. Every other node is
// waited for, so that messages count every answer and a release reaches every live node before
// the process may exit, unless `early` says the outcome is known (a majority said yes to an
// acquire or a renewal: what the others say changes nothing).
// (all_nodes: the caller's `op` refers to its own locals, so every node is waited for, even
// one still busy with an earlier command.)
enum class Early { on_success, never, all_nodes };

// Sends `op` to every node's worker and returns what was seen once the round is over (above) or
// `give_up` passed. `op` runs on the workers and may outlive this call, so it owns everything
// it uses (captured by value) and must not throw.
template <class T, class Op, class Success>
Answers<T> gather(const std::vector<std::shared_ptr<QuorumLock::Worker>>& workers, int cancel_fd,
                  Deadline give_up, Op op, Success success, Early early) {
    const std::size_t n = workers.size();
    auto round = std::make_shared<Round<T>>(n);
    std::vector<char> lagging(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
        auto answer = [round, i, worker = workers[i]](std::optional<T> result,
                                                      std::optional<NodeError> error) {
            worker->answered();
            {
                std::lock_guard lock(round->mutex);
                round->seen.results[i] = std::move(result);
                round->seen.errors[i] = std::move(error);
                ++round->seen.answered;
            }
            round->changed.notify_all();
        };
        lagging[i] = workers[i]->post(
            {[op, answer, i](LockNode& node, Connection& conn) {
                 std::optional<T> result;
                 auto error = node_failure([&] { result = op(i, node, conn); });
                 answer(std::move(result), std::move(error));
             },
             [answer] {
                 answer(std::nullopt,
                        NodeError{"not sent: the node was still busy with an earlier command",
                                  exit_code::unavailable});
             },
             give_up, cancel_fd});
    }
    std::unique_lock lock(round->mutex);
    auto over = [&] {
        const Answers<T>& seen = round->seen;
        if (early == Early::on_success && success(seen)) return true;
        for (std::size_t i = 0; i < n; ++i)
            if ((early == Early::all_nodes || !lagging[i]) && !seen.results[i] && !seen.errors[i])
                return false;
        return true;
    };
    if (give_up == Deadline::max())
        round->changed.wait(lock, over);
    else
        round->changed.wait_until(lock, give_up, over);
    return round->seen;
}

QuorumLock::QuorumLock(const std::vector<Endpoint>& endpoints, Timeouts per_node,
                       ReplicaPolicy replicas)
    : timeouts_(per_node), replicas_(replicas) {
    for (const Endpoint& ep : endpoints) {
        workers_.push_back(std::make_shared<Worker>(ep, per_node));
        workers_.back()->start(workers_.back());
    }
}

// Workers finish what they were sent on their own (each command is bounded by --node-timeout)
// and end; a node that still has not answered when the process exits is simply left: the lock
// there expires by its TTL.
QuorumLock::~QuorumLock() {
    for (auto& w : workers_) w->stop();
}

Connection& QuorumLock::connection(std::size_t i) {
    return workers_[i]->conn;
}

LockNode& QuorumLock::node(std::size_t i) {
    return workers_[i]->node;
}

std::string QuorumLock::describe(std::size_t i) const {
    return workers_[i]->conn.endpoint().describe();
}

std::size_t QuorumLock::majority() const {
    return redlock::majority(workers_.size());
}

void QuorumLock::in_parallel(const std::function<void(std::size_t)>& fn) {
    gather<char>(
        workers_, cancel_fd_, Deadline::max(),
        [&fn](std::size_t i, LockNode&, Connection&) {
            fn(i);
            return char{1};
        },
        [](const Answers<char>&) { return false; }, Early::all_nodes);
}

void QuorumLock::set_cancel_fd(int fd) {
    cancel_fd_ = fd;
}

// The Redlock validity: the lock is ours on a majority until `sent` + ttl by their clocks; the
// drift allowance covers clocks running at different rates. Not counted from the reply: a node
// may have set the key as early as `sent`.
Deadline QuorumLock::lease_end(Deadline sent, Millis ttl) const {
    return sent + ttl - clock_drift(ttl);
}

namespace {

// Counts of answers so far, for the decisions below.
template <class T, class Pred>
std::size_t count_if(const Answers<T>& seen, Pred pred) {
    std::size_t k = 0;
    for (const auto& r : seen.results)
        if (r && pred(*r)) ++k;
    return k;
}

}  // namespace

QuorumAttempt QuorumLock::acquire(const LockKeys& keys, const std::string& token, Millis ttl,
                                  const HolderInfo* info) {
    const std::size_t n = size(), need = majority();
    QuorumAttempt a;
    a.nodes = n;
    a.started = BootClock::now();
    // Past the validity nothing an answer says can make the attempt count.
    const Deadline give_up = a.started + ttl;
    std::optional<HolderInfo> own_info;
    if (info) own_info = *info;
    ReplicaPolicy replicas = replicas_;
    auto seen = gather<AcquireResult>(
        workers_, cancel_fd_, give_up,
        [keys, token, ttl, own_info, replicas, once = once_](std::size_t, LockNode& node,
                                                             Connection& conn) {
            node.set_once_per(once);  // on the node's own worker thread, like every use of it
            AcquireResult r = node.acquire(keys, token, ttl, own_info ? &*own_info : nullptr);
            // A node whose replicas do not have the lock does not count (its key is given back
            // with the rest when the attempt fails, or at release).
            if (r.acquired && replicas.enabled())
                confirm_replicated(conn, replicas,
                                   fmt::format("the acquire of lock '{}'", keys.key),
                                   Deadline::max());
            // The quorum hands out one above the highest counter: that must stay below the
            // limit too (a node refused here counts as failed, and is released below).
            if (r.acquired) checked_fence(r.fence + 1, keys.key);
            return r;
        },
        [need](const Answers<AcquireResult>& seen) {
            return count_if(seen, [](const AcquireResult& r) { return r.acquired; }) >= need;
        },
        Early::on_success);
    long long max_counter = 0;
    std::vector<long long> slots;
    for (std::size_t i = 0; i < n; ++i) {
        if (seen.errors[i]) {
            if (!a.first_error)
                a.first_error =
                    NodeError{fmt::format("{}: {}", describe(i), seen.errors[i]->message),
                              seen.errors[i]->code};
            continue;
        }
        if (!seen.results[i]) continue;  // not answered yet: not counted
        ++a.answered;
        const AcquireResult& r = *seen.results[i];
        if (r.slot_done) {
            // Keep the latest run's record, for the message.
            if (!a.slot_done || r.slot_done->end_ms > a.slot_done->end_ms)
                a.slot_done = r.slot_done;
            a.slot = r.slot;
        } else if (r.acquired) {
            ++a.accepted;
            max_counter = std::max(max_counter, r.fence);
            if (r.slot) slots.push_back(*r.slot);
        } else if (!a.busy || (!a.busy->holder && r.holder)) {
            a.busy = r;
        }
    }
    if (!a.first_error && a.answered < n)
        a.first_error = NodeError{"no answer in time", exit_code::unavailable};

    // --once-per: a node that holds the record of this slot's completed run says the slot is
    // done. The record was written to the majority that held the lock at the end of that run, and
    // any majority shares a node with it, so a run of a done slot cannot reach a majority; should
    // one have (a node that lost the record), a single node's word is still enough to skip.
    if (!a.slot_done && !slots.empty()) {
        std::sort(slots.begin(), slots.end());
        a.slot = slots[slots.size() / 2];
    }
    if (a.slot_done) {
        a.elapsed = since(a.started);
    } else if (quorum_holds(a.accepted, n, ttl, since(a.started))) {
        // Raise the counters of the accepting nodes to one fence above all of theirs. Any later
        // majority shares a node with the majority raised here, and its INCR there exceeds this
        // fence, so fences grow across holders even when a node restarts empty in between.
        long long fence = quorum_fence(max_counter);
        std::vector<char> accepted(n, 0);
        for (std::size_t i = 0; i < n; ++i)
            accepted[i] = seen.results[i] && seen.results[i]->acquired;
        Millis command = timeouts_.command;
        auto raised = gather<bool>(
            workers_, cancel_fd_, give_up,
            [keys, token, fence, accepted, command](std::size_t i, LockNode&, Connection& conn) {
                if (!accepted[i]) return false;
                Reply r = scripts::raise_fence().run(conn, {keys.key, keys.fence, keys.info},
                                                     {token, std::to_string(fence)},
                                                     BootClock::now() + command);
                const redisReply& reply = check(r, "raising the fence");
                return reply.type == REDIS_REPLY_INTEGER && reply.integer == 1;
            },
            [need](const Answers<bool>& seen) {
                return count_if(seen, [](bool b) { return b; }) >= need;
            },
            Early::on_success);
        std::size_t raised_on = count_if(raised, [](bool b) { return b; });
        a.elapsed = since(a.started);
        if (quorum_holds(raised_on, n, ttl, a.elapsed)) {
            a.acquired = true;
            a.fence = fence;
            return a;
        }
        a.why = raised_on < need
                    ? fmt::format("the fence could be raised on only {} of {} nodes", raised_on, n)
                    : fmt::format("the attempt took {}, which leaves no validity of the ttl {}",
                                  format_duration(a.elapsed), format_duration(ttl));
    } else if (a.accepted >= need) {
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

namespace {

// Counts a release round's answers; `release_of` reads a node's result.
template <class T, class Get>
QuorumRelease count_released(const Answers<T>& seen, Get release_of,
                             const std::function<std::string(std::size_t)>& describe) {
    QuorumRelease out;
    for (std::size_t i = 0; i < seen.results.size(); ++i) {
        if (seen.errors[i] || !seen.results[i]) {
            ++out.failed;
            if (!out.first_error)
                out.first_error =
                    seen.errors[i]
                        ? NodeError{fmt::format("{}: {}", describe(i), seen.errors[i]->message),
                                    seen.errors[i]->code}
                        : NodeError{fmt::format("{}: no answer yet", describe(i)),
                                    exit_code::unavailable};
            continue;
        }
        switch (release_of(*seen.results[i])) {
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

}  // namespace

// Waits for every node but one still busy with an earlier command (see gather): that one
// releases in the background while the process lives, or its key expires by its TTL.
QuorumRelease QuorumLock::release(const LockKeys& keys, const std::string& token, Millis keep) {
    auto seen = gather<ReleaseResult>(
        workers_, -1, BootClock::now() + timeouts_.connect + 2 * timeouts_.command,
        [keys, token, keep](std::size_t, LockNode& node, Connection&) {
            // A connection that went stale during a long run gets one fresh try.
            try {
                return node.release(keys, token, keep);
            } catch (const RedisUnavailable&) {
                return node.release(keys, token, keep);
            }
        },
        [](const Answers<ReleaseResult>&) { return false; }, Early::never);
    return count_released(
        seen, [](ReleaseResult r) { return r; }, [this](std::size_t i) { return describe(i); });
}

// As release(), with the run recorded in the same step on every node (ledger.lua). A node whose
// combined step failed gets the plain release, as release() would have sent it: the record
// must never stand between a node and the release.
QuorumRelease QuorumLock::finish(const LockKeys& keys, const std::string& token, Millis keep,
                                 const RunRecord& record) {
    struct NodeFinish {
        ReleaseResult release = ReleaseResult::released;
        std::optional<RecordResult> record;
    };
    auto seen = gather<NodeFinish>(
        workers_, -1, BootClock::now() + timeouts_.connect + 2 * timeouts_.command,
        [keys, token, keep, record](std::size_t, LockNode& node, Connection&) {
            try {
                FinishResult f = node.finish(keys, token, keep, record);
                return NodeFinish{f.release, f.record};
            } catch (const ReplyLost&) {
                // It may have been written (and released): not sent again.
            } catch (const Error&) {
            }
            try {
                return NodeFinish{node.release(keys, token, keep), std::nullopt};
            } catch (const RedisUnavailable&) {
                return NodeFinish{node.release(keys, token, keep), std::nullopt};
            }
        },
        [](const Answers<NodeFinish>&) { return false; }, Early::never);
    QuorumRelease out = count_released(
        seen, [](const NodeFinish& f) { return f.release; },
        [this](std::size_t i) { return describe(i); });
    for (const auto& r : seen.results)
        if (r && r->record) out.recorded.push_back(*r->record);
    return out;
}

RenewResult QuorumLock::renew(const LockKeys& keys, const std::string& token, Millis ttl,
                              Deadline deadline) {
    const std::size_t n = size(), need = majority();
    Deadline sent = BootClock::now();
    ReplicaPolicy replicas = replicas_;
    auto seen = gather<RenewResult>(
        workers_, cancel_fd_, deadline,
        [keys, token, ttl, deadline, replicas](std::size_t, LockNode& node, Connection& conn) {
            RenewResult r = node.renew(keys, token, ttl, deadline);
            if (r == RenewResult::renewed && replicas.enabled())
                confirm_replicated(conn, replicas,
                                   fmt::format("the renewal of lock '{}'", keys.key), deadline);
            return r;
        },
        [need](const Answers<RenewResult>& seen) {
            return count_if(seen, [](RenewResult r) { return r == RenewResult::renewed; }) >= need;
        },
        Early::on_success);
    std::size_t renewed = count_if(seen, [](RenewResult r) { return r == RenewResult::renewed; });
    std::size_t not_owner =
        count_if(seen, [](RenewResult r) { return r == RenewResult::not_owner; });
    std::size_t answered = renewed + not_owner;
    const NodeError* first_error = nullptr;
    for (const auto& e : seen.errors)
        if (e && !first_error) first_error = &*e;
    Millis elapsed = since(sent);
    if (quorum_holds(renewed, n, ttl, elapsed)) {
        if (renewed < n)
            log::verbose("renewed lock '{}' on {}", keys.key, counts(renewed, n, answered));
        return RenewResult::renewed;
    }
    // Once more nodes deny us than a majority can spare, no retry can bring the lock back.
    if (not_owner > n - need) return RenewResult::not_owner;
    // A renewal stopped by the renewer's stop signal must look like one to it.
    if (first_error && first_error->message == Cancelled().what()) throw Cancelled();
    throw RedisUnavailable(fmt::format(
        "renewed on {} in {}{}", counts(renewed, n, answered), format_duration(elapsed),
        first_error ? fmt::format(" (first error: {})", first_error->message) : std::string()));
}

bool QuorumLock::holds(const LockKeys& keys, const std::string& token) {
    const std::size_t need = majority();
    auto seen = gather<bool>(
        workers_, cancel_fd_, BootClock::now() + timeouts_.connect + timeouts_.command,
        [keys, token](std::size_t, LockNode&, Connection& conn) {
            Reply reply = conn.command({"GET", keys.key});
            const redisReply& r = check(reply, fmt::format("checking lock '{}'", keys.key));
            return r.type == REDIS_REPLY_STRING && std::string(r.str, r.len) == token;
        },
        [need](const Answers<bool>& seen) {
            return count_if(seen, [](bool b) { return b; }) >= need;
        },
        Early::on_success);
    return count_if(seen, [](bool b) { return b; }) >= need;
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

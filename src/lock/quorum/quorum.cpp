#include "lock/quorum/quorum.hpp"

#include <fmt/format.h>

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "lock/node/lock_replies.hpp"
#include "lock/node/replicas.hpp"
#include "lock/quorum/quorum_math.hpp"
#include "redis/socket.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/fd.hpp"
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
        return NodeError{e.what(), exit_code::unavailable, true};
    } catch (const std::exception& e) {
        return NodeError{e.what(), exit_code::internal};
    }
}

// A node's worker: its node (and so its connection), and the operations queued for it. The node
// is used by one thread at a time: by the round that claimed it to drive a NodeCall from its own
// thread while nothing else is queued or running for it (claim), else by the worker thread, which
// runs the tasks in order and is started only when the first task comes: a run whose rounds all
// go out in steps creates no thread for its nodes.
// The worker outlives the QuorumLock while an operation is still running (a node that does not
// answer): the thread holds it, and the process may exit before that operation ends.
struct QuorumLock::Worker : std::enable_shared_from_this<QuorumLock::Worker> {
    struct Task {
        std::function<void(QuorumNode&)> run;
        std::function<void()> skip;  // the task's turn came after its give-up time
        Deadline give_up;
        int cancel_fd;
    };

    explicit Worker(std::unique_ptr<QuorumNode> n) : node(std::move(n)) {}

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
        start();
        return lagging;
    }

    // Takes the node for a round's NodeCall on the round's own thread: only while nothing is
    // queued or running for it. Counts as a task not answered yet, so that another thread's
    // round (the renewer's) queues behind it and the worker runs nothing until it is released:
    // answered (the call answered on the round's thread) or hand_over.
    bool claim() {
        std::lock_guard lock(mutex);
        if (unanswered > 0) return false;
        ++unanswered;
        claimed = true;
        return true;
    }
    // A claimed node's call not over when its round is (or whose rest must block): the worker
    // finishes it, before anything queued behind it; `task` calls answered() as any task does.
    void hand_over(Task task) {
        {
            std::lock_guard lock(mutex);
            tasks.push_front(std::move(task));
            claimed = false;
        }
        wake.notify_one();
        start();
    }

    void answered() {
        {
            std::lock_guard lock(mutex);
            --unanswered;
            claimed = false;
        }
        wake.notify_one();  // tasks queued while the node was claimed may run now
    }

    // A claimed node's call not answered when a round was decided without it (an acquire's
    // late node, or the one a frozen node never answers): kept here, the node still claimed, so
    // that a late node costs no thread either. The end of the acquire looks at it again
    // (progress_leftover): by then, a round trip later, a healthy node has answered; a call
    // that may still have to send something (a connect, the body after a NOSCRIPT) goes to
    // the worker then, so that the node gets it while the command runs. One that only owes
    // its answer stays for the next round that involves the node, on whichever thread
    // (settle_leftover), which reads the answer before it sends anything there.
    // A round the node is not part of (the fence step, on a node that did not accept) drives its
    // kept call beside its own (take_leftover, then keep): the late answer is read as it comes,
    // and what it asks for (the body after a NOSCRIPT) goes out at once.
    struct Leftover {
        std::function<bool()> step;      // without blocking: whether the call is over (answered)
        std::function<bool()> sent_all;  // NodeCall::sent_all
        std::function<Connection::Waiting()> waiting;  // NodeCall::waiting
        Task rest;                                     // the call finished on the worker, blocking
    };
    void keep(Leftover l) {
        std::lock_guard lock(mutex);
        leftover = std::move(l);
    }
    std::optional<Leftover> take_leftover() {
        std::lock_guard lock(mutex);
        return std::exchange(leftover, std::nullopt);
    }
    // Before anything else goes to the node: an earlier round's call still out there is over by
    // now, or goes to the worker, ahead of what is sent next.
    void settle_leftover() {
        std::optional<Leftover> left = take_leftover();
        if (left && !left->step()) hand_over(std::move(left->rest));
    }
    // Without blocking: reads a kept call's answer if it came, else keeps it only while nothing
    // is left for it to send (Leftover).
    void progress_leftover() {
        std::optional<Leftover> left = take_leftover();
        if (!left || left->step()) return;
        if (left->sent_all())
            keep(std::move(*left));
        else
            hand_over(std::move(left->rest));
    }

    // The lock is going: a call still kept (it refers to its worker) is dropped, unread, as a
    // process that exits drops it: what it sent is done or not on the node either way.
    void stop() {
        std::optional<Leftover> left;
        {
            std::lock_guard lock(mutex);
            stopping = true;
            left = std::exchange(leftover, std::nullopt);
        }
        wake.notify_one();
    }

  private:
    // The thread starts with every signal blocked, whatever the creating thread's mask: the run
    // reads its signals from a signalfd (SignalEvents), which sees only signals that no thread
    // takes; one taken by a worker (SIGCHLD, whose default is to be ignored) would be lost.
    void start() {
        if (started.exchange(true)) return;
        sigset_t all, before;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &before);
        std::thread([self = shared_from_this()] { self->loop(); }).detach();
        pthread_sigmask(SIG_SETMASK, &before, nullptr);
    }

    void loop() {
        for (;;) {
            Task task;
            {
                std::unique_lock lock(mutex);
                wake.wait(lock, [this] { return stopping || (!claimed && !tasks.empty()); });
                if (tasks.empty() || claimed) return;  // stopping, and nothing left to do
                task = std::move(tasks.front());
                tasks.pop_front();
            }
            if (BootClock::now() >= task.give_up) {
                task.skip();
            } else {
                node->set_cancel_fd(task.cancel_fd);
                task.run(*node);
            }
        }
    }

  public:
    std::unique_ptr<QuorumNode> node;

  private:
    std::optional<Leftover> leftover;  // after `node`: its call refers to it
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<Task> tasks;
    std::size_t unanswered = 0;  // tasks queued or running whose answer is not handed over yet
    bool claimed = false;        // a round's thread drives the node's call (claim)
    bool stopping = false;
    std::atomic<bool> started{false};
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
    // While the round's thread polls its NodeCalls: the workers' answers wake it through this.
    Fd answered{-1};

    void answer(std::size_t i, std::optional<T> result, std::optional<NodeError> error) {
        {
            std::lock_guard lock(mutex);
            seen.results[i] = std::move(result);
            seen.errors[i] = std::move(error);
            ++seen.answered;
        }
        changed.notify_all();
        if (answered) {
            std::uint64_t one = 1;
            [[maybe_unused]] auto written = ::write(answered.get(), &one, sizeof one);
        }
    }
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

// Sends an operation to every node and returns what was seen once the round is over (above) or
// `give_up` passed. Where a node is idle and `start` gives its split-phase call (NodeCall: the
// product's nodes, for the acquire, the fence step and the finish), this thread sends it and
// drives every such call in one poll(), with `cancel_fd` (a signal) ending them. A call not
// answered when the round is over is kept for later (Worker::Leftover) after an early decision,
// and otherwise handed to its node's worker, which finishes it in the background as it would
// have run it. Every other node gets `op` on its worker. `op` and the calls may outlive this
// call, so they own everything they use (captured by value); `op` must not throw, and what
// `start` throws is its node's answer.
template <class T, class Op, class Start, class Success>
Answers<T> gather(const std::vector<std::shared_ptr<QuorumLock::Worker>>& workers, int cancel_fd,
                  Deadline give_up, Op op, Start start, Success success, Early early,
                  const std::vector<char>& only = {}) {
    const std::size_t n = workers.size();
    auto round = std::make_shared<Round<T>>(n);
    // Nodes outside `only` (when given) are not part of the round: nothing is sent there, and
    // they are not waited for, as lagging ones are not.
    std::vector<char> lagging(n, 0);
    for (std::size_t i = 0; i < only.size() && i < n; ++i) lagging[i] = !only[i];
    for (std::size_t i = 0; i < n; ++i)
        if (!lagging[i]) workers[i]->settle_leftover();
    // The kept calls of the nodes left out, driven beside the round (Worker::Leftover), and kept
    // again however the round ends if they are still out.
    struct Beside {
        const std::vector<std::shared_ptr<QuorumLock::Worker>>& workers;
        std::vector<std::optional<QuorumLock::Worker::Leftover>> calls;
        ~Beside() {
            for (std::size_t i = 0; i < calls.size(); ++i)
                if (calls[i]) workers[i]->keep(std::move(*calls[i]));
        }
    } beside{workers, std::vector<std::optional<QuorumLock::Worker::Leftover>>(n)};
    for (std::size_t i = 0; i < n; ++i)
        if (lagging[i]) beside.calls[i] = workers[i]->take_leftover();
    auto answer_from = [&round, &workers](std::size_t i) {
        return [round, i, worker = workers[i]](std::optional<T> result,
                                               std::optional<NodeError> error) {
            worker->answered();
            round->answer(i, std::move(result), std::move(error));
        };
    };
    // This thread's calls: sent first, so that they are on their way while the workers start.
    std::vector<std::shared_ptr<NodeCall<T>>> calls(n);
    std::size_t driving = 0;
    if (early != Early::all_nodes)
        for (std::size_t i = 0; i < n; ++i) {
            if (lagging[i] || !workers[i]->claim()) continue;
            QuorumNode& node = *workers[i]->node;
            node.set_cancel_fd(cancel_fd);
            auto error = node_failure([&] { calls[i] = start(i, node); });
            if (calls[i]) {
                ++driving;
            } else if (error) {
                answer_from(i)(std::nullopt, std::move(error));
            } else {
                workers[i]->answered();  // no split-phase form: on its worker, below
            }
        }
    // Before this thread's poll() has a worker's answer to wait for: the eventfd that wakes it
    // (made then, before the worker has the task, and only then: most rounds need none).
    auto wake_on_answers = [&] {
        if (driving == 0 || round->answered) return;
        round->answered = Fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        if (!round->answered)
            throw Error(fmt::format("eventfd: {}", std::strerror(errno)), exit_code::internal);
    };
    for (std::size_t i = 0; i < n; ++i) {
        if (calls[i] || round->seen.errors[i] || (i < only.size() && !only[i])) continue;
        wake_on_answers();
        auto answer = answer_from(i);
        lagging[i] = workers[i]->post(
            {[op, answer, i](QuorumNode& node) {
                 std::optional<T> result;
                 auto error = node_failure([&] { result = op(i, node); });
                 answer(std::move(result), std::move(error));
             },
             [answer] {
                 answer(std::nullopt,
                        NodeError{"not sent: the node was still busy with an earlier command",
                                  exit_code::unavailable});
             },
             give_up, cancel_fd});
    }
    auto over = [&] {
        const Answers<T>& seen = round->seen;
        if (early == Early::on_success && success(seen)) return true;
        for (std::size_t i = 0; i < n; ++i)
            if ((early == Early::all_nodes || !lagging[i]) && !seen.results[i] && !seen.errors[i])
                return false;
        return true;
    };
    if (driving == 0) {
        std::unique_lock lock(round->mutex);
        if (give_up == Deadline::max())
            round->changed.wait(lock, over);
        else
            round->changed.wait_until(lock, give_up, over);
        return round->seen;
    }
    // The rest of a call, for its node's worker: not skipped at its turn, since what it sent
    // may have run and its connection owes the reply.
    auto rest_of = [&](std::size_t i) -> QuorumLock::Worker::Task {
        return {[call = calls[i], answer = answer_from(i)](QuorumNode&) {
                    std::optional<T> result;
                    auto error = node_failure([&] { result = call->finish(); });
                    answer(std::move(result), std::move(error));
                },
                [] {}, Deadline::max(), cancel_fd};
    };
    auto hand_over = [&](std::size_t i) {
        workers[i]->hand_over(rest_of(i));
        calls[i].reset();
        --driving;
    };
    auto step = [&](std::size_t i) {
        std::optional<T> result;
        auto error = node_failure([&] { result = calls[i]->step(); });
        if (result || error) {
            calls[i].reset();
            --driving;
            answer_from(i)(std::move(result), std::move(error));
        } else if (calls[i]->blocks()) {
            wake_on_answers();
            hand_over(i);  // the round waits for its answer, as for any worker's
        }
    };
    for (std::size_t i = 0; i < n; ++i)
        if (calls[i]) step(i);  // the writes go out now
    bool cancelled = false;
    std::vector<pollfd> fds;
    std::vector<std::size_t> polled;
    for (;;) {
        {
            std::lock_guard lock(round->mutex);
            if (over()) break;
        }
        Deadline now = BootClock::now();
        if (now >= give_up) break;
        Deadline until = give_up;
        fds.clear(), polled.clear();
        for (std::size_t i = 0; i < n; ++i) {
            if (!calls[i]) continue;
            Connection::Waiting w = calls[i]->waiting();
            fds.push_back({w.fd, w.events, 0});
            polled.push_back(i);
            until = std::min(until, w.until);
        }
        const std::size_t ours = fds.size();
        for (std::size_t i = 0; i < n; ++i) {
            if (!beside.calls[i]) continue;
            Connection::Waiting w = beside.calls[i]->waiting();
            fds.push_back({w.fd, w.events, 0});
            polled.push_back(i);
            until = std::min(until, w.until);
        }
        fds.push_back({round->answered.get(), POLLIN, 0});
        const bool watch_cancel = cancel_fd >= 0 && !cancelled && driving > 0;
        if (watch_cancel) fds.push_back({cancel_fd, POLLIN, 0});
        int ready = ::poll(fds.data(), fds.size(), millis_until(until));
        if (ready < 0 && errno != EINTR)
            throw Error(fmt::format("poll: {}", std::strerror(errno)), exit_code::internal);
        if (watch_cancel && (fds.back().revents & POLLIN)) {
            // A signal: every call this thread drives ends now, as a cancelled command does.
            cancelled = true;
            for (std::size_t i = 0; i < n; ++i) {
                if (!calls[i]) continue;
                calls[i]->abort();
                calls[i].reset();
                --driving;
                answer_from(i)(std::nullopt,
                               NodeError{Cancelled().what(), exit_code::unavailable, true});
            }
        }
        now = BootClock::now();
        for (std::size_t k = 0; k < ours; ++k) {
            std::size_t i = polled[k];
            if (calls[i] && (fds[k].revents != 0 || now >= calls[i]->waiting().until)) step(i);
        }
        for (std::size_t k = ours; k < polled.size(); ++k) {
            auto& left = beside.calls[polled[k]];
            if ((fds[k].revents != 0 || now >= left->waiting().until) && left->step()) left.reset();
        }
        if (fds[polled.size()].revents & POLLIN) {
            std::uint64_t count = 0;
            [[maybe_unused]] auto got = ::read(round->answered.get(), &count, sizeof count);
        }
    }
    // Calls still out: after a round decided early, kept for the next round, or for the end of
    // the acquire (Worker::Leftover). After one that waited as long as it could, to their
    // workers, so that what was sent (a release) is done while the process lives.
    for (std::size_t i = 0; i < n; ++i) {
        if (!calls[i]) continue;
        if (early != Early::on_success) {
            hand_over(i);
            continue;
        }
        workers[i]->keep({[call = calls[i], answer = answer_from(i)] {
                              std::optional<T> result;
                              auto error = node_failure([&] { result = call->step(); });
                              if (!result && !error) return false;
                              answer(std::move(result), std::move(error));
                              return true;
                          },
                          [call = calls[i]] { return call->sent_all(); },
                          [call = calls[i]] { return call->waiting(); }, rest_of(i)});
        calls[i].reset();
    }
    std::lock_guard lock(round->mutex);
    return round->seen;
}

// The same without split-phase forms: every node's op on its worker.
template <class T, class Op, class Success>
Answers<T> gather(const std::vector<std::shared_ptr<QuorumLock::Worker>>& workers, int cancel_fd,
                  Deadline give_up, Op op, Success success, Early early) {
    return gather<T>(
        workers, cancel_fd, give_up, op,
        [](std::size_t, QuorumNode&) { return std::unique_ptr<NodeCall<T>>(); }, success, early);
}

namespace {

std::vector<std::unique_ptr<QuorumNode>> redis_nodes(const std::vector<Endpoint>& endpoints,
                                                     Timeouts per_node, int permits, bool shared) {
    std::vector<std::unique_ptr<QuorumNode>> nodes;
    for (const Endpoint& ep : endpoints)
        nodes.push_back(make_redis_node(ep, per_node, permits, shared));
    return nodes;
}

}  // namespace

QuorumLock::QuorumLock(const std::vector<Endpoint>& endpoints, Timeouts per_node,
                       ReplicaPolicy replicas, int permits, bool shared,
                       std::optional<Timeouts> give_back)
    : QuorumLock(redis_nodes(endpoints, per_node, permits, shared), per_node, replicas, permits,
                 shared, give_back) {}

QuorumLock::QuorumLock(std::vector<std::unique_ptr<QuorumNode>> nodes, Timeouts per_node,
                       ReplicaPolicy replicas, int permits, bool shared,
                       std::optional<Timeouts> give_back)
    : timeouts_(per_node),
      give_back_(give_back.value_or(per_node)),
      replicas_(replicas),
      permits_(permits),
      shared_(shared) {
    give_back_.connect = std::max(give_back_.connect, per_node.connect);
    give_back_.command = std::max(give_back_.command, per_node.command);
    for (auto& node : nodes) workers_.push_back(std::make_shared<Worker>(std::move(node)));
}

// Workers finish what they were sent on their own (each command is bounded by --node-timeout)
// and end; a call still kept unread (Worker::Leftover) is dropped; a node that still has not
// answered when the process exits is simply left: the lock there expires by its TTL.
QuorumLock::~QuorumLock() {
    for (auto& w : workers_) w->stop();
}

Connection& QuorumLock::connection(std::size_t i) {
    return workers_[i]->node->connection();
}

std::string QuorumLock::describe(std::size_t i) const {
    return workers_[i]->node->describe();
}

std::size_t QuorumLock::majority() const {
    return redlock::majority(workers_.size());
}

void QuorumLock::in_parallel(const std::function<void(std::size_t)>& fn) {
    gather<char>(
        workers_, cancel_fd_, Deadline::max(),
        [&fn](std::size_t i, QuorumNode&) {
            fn(i);
            return char{1};
        },
        [](const Answers<char>&) { return false; }, Early::all_nodes);
}

// A node timeout that follows the round trip, for a quorum whose nodes are farther away than the
// default allows (every attempt exited 69 with nodes that answered). Raising it changes no
// safety property: it is what --node-timeout of that value does, and the same bound applies (at
// most a tenth of the ttl, so that a slow node leaves most of the validity; the Redlock validity
// still counts every attempt's whole time). The failed attempt before it gave back what it
// took, on every node, as any failed attempt does. The factor leaves room for a round trip that
// varies; a node slower than the cap allows still ends the run with the message that names
// --node-timeout.
bool QuorumLock::follow(Millis round_trip, Millis ttl) {
    if (!follow_round_trip_) return false;
    Millis raised = std::min(round_trip * follow_factor, ttl / 10);
    if (raised <= timeouts_.command) return false;
    log::verbose(
        "a node answers in {}, later than the node timeout {}: raising it to {} for this "
        "run (--node-timeout not given)",
        format_duration(round_trip), format_duration(timeouts_.command), format_duration(raised));
    timeouts_.connect = std::min(give_back_.connect, raised);
    timeouts_.command = raised;
    give_back_.command = std::max(give_back_.command, raised);
    const Timeouts per_node = timeouts_;
    // On each node's worker, which uses its connection while no round has claimed it.
    in_parallel([this, per_node](std::size_t i) { connection(i).set_timeouts(per_node); });
    return true;
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

// After a split (each node gave the run a permit, not the same one on a majority): the permit
// that the most of those nodes had free, the lowest of a tie; 0 when none said. Nodes that
// agree on which permits are free give the same waiter the same one, but a quorum's holders
// make them disagree (permits.lua): asking every node for a permit that most have free is what
// lets the next attempt agree.
int most_often_free(const Answers<AcquireResult>& seen, int permits) {
    std::vector<std::size_t> free(static_cast<std::size_t>(permits), 0);
    for (const auto& r : seen.results)
        if (r && r->acquired && r->free_permits.size() == free.size())
            for (std::size_t p = 0; p < free.size(); ++p) free[p] += r->free_permits[p];
    auto best = std::max_element(free.begin(), free.end());
    if (best == free.end() || *best == 0) return 0;
    return static_cast<int>(best - free.begin()) + 1;
}

// The permit that the most nodes gave us so far (the lowest of a tie), and on how many: a plain
// lock's every acceptance is "permit 1".
struct Pick {
    int permit = 1;
    std::size_t nodes = 0;
};
Pick best_permit(const Answers<AcquireResult>& seen) {
    std::map<int, std::size_t> votes;
    for (const auto& r : seen.results)
        if (r && r->acquired && !r->slot_done) ++votes[r->permit];
    Pick best;
    for (const auto& [permit, nodes] : votes)
        if (nodes > best.nodes) best = {permit, nodes};
    return best;
}

// What the acquire round's answers add up to. Counts into `a` (answered, accepted, the busy
// reply, the restart guard's hold-backs, --once-per's slot and record, each node's bound on a
// wait, the first error), and returns what the fence step needs.
struct Tally {
    std::size_t took = 0;  // nodes that gave us a permit, whichever
    long long max_counter = 0;
    std::size_t agreed = 0;  // accepting nodes whose counter is max_counter
};
Tally count_acquires(const QuorumLock& lock, const Answers<AcquireResult>& seen, const Pick& pick,
                     QuorumAttempt& a) {
    const std::size_t n = seen.results.size();
    Tally t;
    std::vector<long long> slots;
    a.holder_pttl.assign(n, -1);
    a.reached.assign(n, 0);
    for (std::size_t i = 0; i < n; ++i) {
        if (seen.errors[i]) {
            if (!a.first_error)
                a.first_error =
                    NodeError{fmt::format("{}: {}", lock.describe(i), seen.errors[i]->message),
                              seen.errors[i]->code};
            continue;
        }
        if (!seen.results[i]) continue;  // not answered yet: not counted
        ++a.answered;
        a.reached[i] = 1;
        const AcquireResult& r = *seen.results[i];
        // A node that lost its data lately knows nothing of the holders or of the slot's run
        // it had: it votes busy (the restart guard). Its "the slot may have run" is no record,
        // so it does not skip the slot for the others: a majority without it decides, and any
        // majority that took the lock before shares a node with every later one.
        if (r.restart_uptime_s || (r.slot_done && r.slot_done->restart_s)) {
            ++a.held_back;
            if (!a.held_back_longest ||
                (r.restart_uptime_s && r.holder_pttl > a.held_back_longest->holder_pttl))
                a.held_back_longest = r;
            a.holder_pttl[i] = r.restart_uptime_s ? r.holder_pttl : -1;
            continue;
        }
        if (r.slot_done) {
            // Keep the latest run's record, for the message.
            if (!a.slot_done || r.slot_done->end_ms > a.slot_done->end_ms)
                a.slot_done = r.slot_done;
            a.slot = r.slot;
        } else if (r.acquired) {
            ++t.took;
            if (r.permit == pick.permit) ++a.accepted;
            // A permit this token already held there answers the fence it drew then, and the
            // counter now (AcquireResult::counter): the counter is what later majorities' INCRs
            // must exceed, so it is the one that counts.
            t.max_counter = std::max(t.max_counter, r.counter.value_or(r.fence));
            if (r.slot) slots.push_back(*r.slot);
        } else {
            a.holder_pttl[i] = r.holder_pttl;
            if (!a.busy || (!a.busy->holder && r.holder)) a.busy = r;
        }
    }
    for (std::size_t i = 0; i < n; ++i)
        if (seen.results[i] && !seen.errors[i] && seen.results[i]->acquired &&
            seen.results[i]->permit == pick.permit && !seen.results[i]->restart_uptime_s &&
            !seen.results[i]->slot_done &&
            seen.results[i]->counter.value_or(seen.results[i]->fence) == t.max_counter)
            ++t.agreed;
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
    return t;
}

}  // namespace

namespace {

// An acquire's answer, from a node's synchronous acquire or its NodeCall alike: a lost reply is
// noted (`lost`: the acquire may have taken the key), and an answer must pass `check`.
struct AcquireCheck {
    std::function<void(std::size_t)> lost;
    std::function<void(const AcquireResult&)> check;

    // `get` returns the answer, or nullopt while there is none yet.
    template <class Get>
    std::optional<AcquireResult> answer(std::size_t i, Get get) const {
        try {
            std::optional<AcquireResult> r = get();
            if (r) check(*r);
            return r;
        } catch (const ReplyLost&) {
            lost(i);
            throw;
        }
    }
};

class CheckedAcquire final : public NodeCall<AcquireResult> {
  public:
    CheckedAcquire(std::unique_ptr<NodeCall<AcquireResult>> call, AcquireCheck check, std::size_t i)
        : call_(std::move(call)), check_(std::move(check)), i_(i) {}
    Connection::Waiting waiting() const override { return call_->waiting(); }
    bool sent_all() const override { return call_->sent_all(); }
    std::optional<AcquireResult> step() override {
        return check_.answer(i_, [&] { return call_->step(); });
    }
    AcquireResult finish() override {
        return *check_.answer(i_, [&] { return std::optional<AcquireResult>(call_->finish()); });
    }
    void abort() override { call_->abort(); }

  private:
    std::unique_ptr<NodeCall<AcquireResult>> call_;
    AcquireCheck check_;
    std::size_t i_;
};

}  // namespace

// Waiting across a quorum (a waiter's `ticket` > 0). Each node keeps its own queue of the same
// waiters, a sorted set ordered by ticket: the time the waiter began waiting, by its host's clock,
// ties broken by token (lib/queue.lua). So every node orders any two waiters the same way,
// whichever node each reached first, and a free key on a node is reserved for that node's live
// head (acquire.lua), also against runs without --wait. A release wakes the head on every node.
// - Safety is Redlock's and does not depend on the queue: a holder has the key on a majority.
//   The queue only narrows who may take a free key.
// - Order: say waiter A's ticket is below B's and A is queued on a majority QA. For B to hold the
//   lock it needs a majority QB of nodes that let it in, and QA and QB share a node, where A, the
//   earlier ticket, is the head (while A is alive): B cannot take that node. So a waiter queued on
//   a majority is served before every later ticket. One queued on fewer (nodes were down or
//   frozen when it arrived) may be overtaken until its next attempt queues it on the rest.
// - Progress, with no deadlock: take the live waiter W with the lowest ticket. It is the head on
//   every node it is queued on, and each attempt queues it on every node that answers (a node it
//   took in a failed attempt it gives back and stays queued on, in one step: abandon.lua). Once
//   the holder releases or expires, every such node is free for W alone, so as soon as a majority
//   answers, W holds the lock. Two waiters cannot each hold the other's majority hostage: a split
//   vote (each took a minority) ends with both queued everywhere, and the lower ticket wins next.
//   A waiter that dies leaves by itself: its ':alive' mark expires and the nodes skip it.
// - Permits (--permits N): a holder holds permit i when a majority gave it permit i; what other
//   nodes gave it does not count, and is given back. Permit i is then a Redlock lock of its own,
//   held by one token at a time, so at most N holders hold the name at once. (Counting any
//   permit on a majority would not do: with N = 2 on three nodes, holders of {1,2}, {2,3} and
//   {1,3} fill no node beyond 2, yet make three.) Each node gives its k-th queued waiter the
//   k-th free permit (permits.lua), and orders the waiters by ticket, so nodes that agree on
//   which permits are free agree on each waiter's permit, whatever order the requests came in.
// - Shared holders (--shared): a shared holder holds the name when it is among the shared
//   holders on a majority. Each node keeps shared and exclusive holders apart, and any two
//   majorities share a node, so a shared and an exclusive holder (or two exclusive ones) never
//   hold at once. Writer preference works as the order above: every node queues both kinds by
//   ticket, and a shared run is not let in on a node where an exclusive waiter is queued ahead
//   of it, so once an exclusive waiter is queued on a majority no later shared run can be.
// - Fairness across hosts is only as good as their clocks: waiters whose start times are closer
//   than the clocks' skew may be served in either order; on one host, in the order they began.
QuorumAttempt QuorumLock::acquire(const LockKeys& keys, const std::string& token, Millis ttl,
                                  const HolderInfo* info, long long ticket) {
    const std::size_t n = size(), need = majority();
    QuorumAttempt a;
    a.nodes = n;
    a.started = BootClock::now();
    // Past the validity nothing an answer says can make the attempt count.
    const Deadline give_up = a.started + ttl;
    std::optional<HolderInfo> own_info;
    if (info) own_info = *info;
    // The settings are copied: each node's acquire applies them (on its worker, or in steps).
    // The fence floor: this host's clock in microseconds, one second ahead, the same for every
    // node. Above their counters and clocks (clocks that agree within the second), every node
    // draws the same fence, one above it, and a majority drawing alike needs no fence step below.
    // A host whose clock is behind only costs that step, as before; one ahead raises fences, which
    // may only grow.
    const long long floor_us =
        std::chrono::duration_cast<std::chrono::microseconds>(
            (std::chrono::system_clock::now() + std::chrono::seconds(1)).time_since_epoch())
            .count();
    const NodeAcquire how{ticket,
                          once_,
                          busy_holder_,
                          wanted_permit_,
                          restart_guard_,
                          replicas_,
                          ticket > 0 ? hand_off_claim() : std::nullopt,
                          floor_us > 0 ? std::optional<long long>(floor_us) : std::nullopt};
    // Nodes whose acquire was sent and its reply lost: it may have taken the key (give_back).
    auto lost = std::make_shared<std::vector<std::atomic<bool>>>(n);
    // What a node's answer must also pass: the quorum hands out one above the highest counter,
    // and that must stay below the limit too (a node refused here counts as failed, and is
    // released below).
    AcquireCheck check{[lost](std::size_t i) { (*lost)[i] = true; },
                       [key = keys.key](const AcquireResult& r) {
                           if (r.acquired) checked_fence(r.counter.value_or(r.fence) + 1, key);
                       }};
    auto seen = gather<AcquireResult>(
        workers_, cancel_fd_, give_up,
        [keys, token, ttl, own_info, how, check](std::size_t i, QuorumNode& node) {
            return *check.answer(i, [&] {
                return std::optional<AcquireResult>(
                    node.acquire(keys, token, ttl, own_info ? &*own_info : nullptr, how));
            });
        },
        [&](std::size_t i, QuorumNode& node) -> std::unique_ptr<NodeCall<AcquireResult>> {
            auto call = node.start_acquire(keys, token, ttl, own_info ? &*own_info : nullptr, how);
            if (!call) return nullptr;
            return std::make_unique<CheckedAcquire>(std::move(call), check, i);
        },
        [need](const Answers<AcquireResult>& seen) { return best_permit(seen).nodes >= need; },
        Early::on_success);
    const Pick pick = best_permit(seen);
    a.permit = pick.permit;
    const Tally tally = count_acquires(*this, seen, pick, a);
    a.split = permits_ > 1 && a.accepted < need && tally.took > a.accepted;
    wanted_permit_ = a.split ? most_often_free(seen, permits_) : 0;

    if (a.slot_done) {
        a.elapsed = since(a.started);
    } else if (quorum_holds(a.accepted, n, ttl, since(a.started))) {
        std::vector<char> accepted(n, 0);
        for (std::size_t i = 0; i < n; ++i)
            accepted[i] = seen.results[i] && seen.results[i]->acquired &&
                          seen.results[i]->permit == pick.permit;
        // Agreed: a majority of nodes drew the highest counter alike (the fence floor above).
        // Then that counter is the fence, with no fence step. It is above every earlier fence:
        // the majority that the last holder raised (or that agreed on its fence) shares a node
        // with this one, whose counter was at least that fence and was then incremented. And
        // every later fence is above it: a later majority shares a node with this one, whose
        // counter already is this fence. Only for the plain lock, whose holders follow one
        // another: permits and shared holders hold at once, and while one's fence step (to its
        // highest counter + 1) is on its way, another could draw that same value on a majority
        // and take it as agreed (quorum_shared.bats's contenders saw fences repeat so). The
        // step's other work must be nothing, too: a waiter leaves the queue on the nodes that
        // did not accept in it.
        if (permits_ == 1 && !shared_ && tally.agreed >= need && (a.accepted == n || ticket == 0)) {
            a.acquired = true;
            a.fence = tally.max_counter;
            a.elapsed = since(a.started);
            for (auto& w : workers_) w->progress_leftover();
            return a;
        }
        // Otherwise raise the counters of the accepting nodes to one fence above all of theirs.
        // Any later majority shares a node with the majority raised here, and its INCR there
        // exceeds this fence, so fences grow across holders even when a node restarts empty in
        // between.
        long long fence = quorum_fence(tally.max_counter);
        std::size_t raised_on =
            raise_fences(keys, token, fence, accepted, ticket, pick.permit, give_up);
        a.elapsed = since(a.started);
        if (quorum_holds(raised_on, n, ttl, a.elapsed)) {
            a.acquired = true;
            a.fence = fence;
            for (auto& w : workers_) w->progress_leftover();
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
    // A waiter keeps its place while it does so, on every node, in the same step.
    if (a.accepted > 0 || a.answered < n) {
        // The wider bounds where the acquire may have taken the key unseen: its reply was lost,
        // or had not come yet. A node whose acquire failed otherwise (refused, not reachable in
        // the node timeout) got nothing, and keeps the narrow bounds: a node that is down must
        // not hold up every failed attempt for a --connect-timeout.
        std::vector<char> wide(n, 0), answered(n, 0);
        for (std::size_t i = 0; i < n; ++i) {
            wide[i] = (*lost)[i] || !seen.errors[i];
            answered[i] = seen.results[i].has_value();
        }
        give_back_attempt(keys, token, ticket, ttl, wide, answered, a);
    }
    for (auto& w : workers_) w->progress_leftover();
    return a;
}

// The fence step of an attempt that a majority accepted: raises the counter of each accepting
// node (`accepted`) to `fence`; a waiter also leaves the queue on every other node (busy there,
// or not yet answered: this runs after its acquire there, and keeps a key it took late), and
// with permits every other node gives back a permit other than ours (settle_permit); a plain
// lock without a waiter leaves the other nodes alone.
// Returns on how many nodes the fence was raised (decided as soon as a majority has).
std::size_t QuorumLock::raise_fences(const LockKeys& keys, const std::string& token,
                                     long long fence, const std::vector<char>& accepted,
                                     long long ticket, int permit, Deadline give_up) {
    const std::size_t need = majority();
    const int permits = permits_;
    auto raised = gather<bool>(
        workers_, cancel_fd_, give_up,
        [keys, token, fence, accepted, ticket, permits, permit](std::size_t i, QuorumNode& node) {
            if (!accepted[i] && permits > 1) node.settle_permit(keys, token, permit);
            if (!accepted[i] && ticket > 0 && permits == 1) node.leave_queue(keys, token);
            if (!accepted[i]) return false;
            return node.raise_fence(keys, token, fence, permit);
        },
        [&](std::size_t i, QuorumNode& node) -> std::unique_ptr<NodeCall<bool>> {
            if (!accepted[i]) return nullptr;
            return node.start_raise_fence(keys, token, fence, permit);
        },
        [need](const Answers<bool>& seen) {
            return count_if(seen, [](bool b) { return b; }) >= need;
        },
        // A plain lock without a waiter has no step on the other nodes: they are left alone
        // (one that answered the acquire late may still be reading it).
        Early::on_success, permits > 1 || ticket > 0 ? std::vector<char>() : accepted);
    return count_if(raised, [](bool b) { return b; });
}

// A failed attempt's give-back on every node (a waiter's step back, keeping its place), under
// the wide bounds on the nodes `wide` names; then, from how long each took, what to say about
// nodes that answered the acquire too late (`answered`: the ones that did in time).
void QuorumLock::give_back_attempt(const LockKeys& keys, const std::string& token, long long ticket,
                                   Millis ttl, const std::vector<char>& wide,
                                   const std::vector<char>& answered, QuorumAttempt& a) {
    const std::size_t n = size();
    a.stepped_back_from = BootClock::now();
    std::vector<std::optional<Millis>> took =
        ticket > 0
            ? step_back(keys, token, ticket, ttl, wide)
            : give_back([keys, token](QuorumNode& node) { node.release(keys, token, Millis(0)); },
                        wide);
    a.stepped_back.assign(n, 0);
    for (std::size_t i = 0; i < n && ticket > 0; ++i) a.stepped_back[i] = took[i].has_value();
    // A node that did not answer the acquire in time but answered its give-back, slower than
    // the node timeout: it is far away (or loaded), not down. Say so, and what to change.
    bool measured_late = false;
    for (std::size_t i = 0; i < n; ++i) {
        if (answered[i] || !took[i] || *took[i] <= timeouts_.command) continue;
        a.first_error = NodeError{
            fmt::format("{}: answers, but later than --node-timeout {} allows: a round trip "
                        "there took {} (its give-back's); raise --node-timeout above that",
                        describe(i), format_duration(timeouts_.command), format_duration(*took[i])),
            exit_code::unavailable};
        measured_late = true;
        break;
    }
    for (std::size_t i = 0; i < n; ++i)
        if (!answered[i] && took[i] && *took[i] > timeouts_.command)
            a.late_round_trip = std::max(a.late_round_trip.value_or(Millis(0)), *took[i]);
    // Unmeasured (the connect itself timed out, so nothing was sent): still name the bound.
    if (!measured_late && a.answered < majority() && a.first_error &&
        a.first_error->message.find("timed out") != std::string::npos)
        a.first_error->message +=
            fmt::format(" (--node-timeout {} bounds each node's connect and command)",
                        format_duration(timeouts_.command));
}

// A give-back is not a vote: it decides nothing, so the node timeout, kept short so that a slow
// node costs an attempt little of its validity, has no reason to bound it. Bounded by it, a node
// farther away than the node timeout never got one: the reconnect after the acquire's lost reply
// timed out, or its answer did, and the key the acquire took there stayed for its whole TTL. So
// it runs under --connect-timeout and --command-timeout (at least the node timeout) on the nodes
// `wide` names, and the round waits for it. Returns the time each node took to answer it (from
// the send: a round trip).
std::vector<std::optional<Millis>> QuorumLock::give_back(const std::function<void(QuorumNode&)>& op,
                                                         const std::vector<char>& wide) {
    const Timeouts wider = give_back_;
    const bool any_wide = std::find(wide.begin(), wide.end(), 1) != wide.end();
    const Timeouts& bound = any_wide ? wider : timeouts_;
    auto seen = gather<Millis>(
        workers_, -1, BootClock::now() + bound.connect + 2 * bound.command,
        [wider, op, wide](std::size_t i, QuorumNode& node) {
            struct Restore {
                QuorumNode& node;
                Timeouts votes;
                ~Restore() { node.set_timeouts(votes); }
            } restore{node, node.timeouts()};
            if (i < wide.size() && wide[i]) node.set_timeouts(wider);
            auto once = [&] {
                node.ensure_connected();
                Deadline sent = BootClock::now();
                op(node);
                return since(sent);
            };
            // A connection that went stale (or that a lost reply closed) gets one fresh try.
            try {
                return once();
            } catch (const RedisUnavailable&) {
                return once();
            }
        },
        [](const Answers<Millis>&) { return false; }, Early::never);
    return seen.results;
}

std::vector<std::optional<Millis>> QuorumLock::step_back(const LockKeys& keys,
                                                         const std::string& token, long long ticket,
                                                         Millis ttl,
                                                         const std::vector<char>& wide) {
    // The ':alive' mark must outlast the block that follows (each node's is bounded by a TTL of
    // at most the holder's ttl, or by no_ttl_recheck) plus the attempt after it.
    Millis alive = std::max(ttl, no_ttl_recheck) + 2 * timeouts_.command + Millis(1000);
    return give_back([keys, token, ticket,
                      alive](QuorumNode& node) { node.step_back(keys, token, ticket, alive); },
                     wide);
}

// After the last attempt's own give-back (step_back, with the wider bounds where they were
// needed): the node timeouts, as before.
void QuorumLock::leave(const LockKeys& keys, const std::string& token) {
    give_back([keys, token](QuorumNode& node) { node.abandon(keys, token); }, {});
}

namespace {

// One round of await_wake, shared with the tasks that may outlive it. `stop` is every task's
// cancel descriptor; `answered` counts the tasks that are over (an eventfd the caller polls
// beside the signals); started/finished let the caller wait for the BLPOPs it cut short.
struct WakeRound {
    explicit WakeRound(std::size_t n) {
        seen.handed.resize(n), seen.empty_at.resize(n), seen.woken.resize(n);
    }
    Fd stop{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
    Fd answered{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
    std::mutex mutex;
    std::condition_variable changed;
    bool stopped = false;
    std::size_t started = 0, finished = 0;
    QuorumWake seen;  // what each node's wait saw (under mutex)
};

void signal_eventfd(const Fd& fd) {
    std::uint64_t one = 1;
    [[maybe_unused]] auto written = ::write(fd.get(), &one, sizeof one);
}

}  // namespace

// One BLPOP on each node's wake-up list for `token`, as a task of that node's worker; the caller
// polls for a majority of answers (or a signal) rather than waiting on a condition variable, and
// the round's `stop`, each task's cancel descriptor, cuts the rest short. Those are waited for
// before returning (they end at once), so that the next round sees the nodes as free again: a
// leave() sent next must reach them before the process may exit. A node still busy with an
// earlier command (frozen) never started its BLPOP, and is not waited for.
QuorumWake QuorumLock::await_wake(const LockKeys& keys, const std::string& token,
                                  const QuorumAttempt& attempt, Deadline until, int interrupt,
                                  Millis grace) {
    const std::size_t n = size(), need = majority();
    Deadline now = BootClock::now();
    auto round = std::make_shared<WakeRound>(n);
    if (now >= until) return round->seen;
    const Millis left = std::chrono::ceil<Millis>(until - now);
    // A node that gave no bound (it answered nothing, or we gave its key back) waits as long as
    // the longest known one: its wake-up comes with the others' when the holder releases.
    long long longest = -1;
    for (long long p : attempt.holder_pttl) longest = std::max(longest, p);
    const Millis fallback = longest >= 0 ? Millis(longest + 1) : no_ttl_recheck;
    if (!round->stop || !round->answered)
        throw Error(fmt::format("eventfd: {}", std::strerror(errno)), exit_code::internal);
    Millis longest_block{1};
    const Millis command = timeouts_.command;
    for (std::size_t i = 0; i < n; ++i) {
        const long long p = i < attempt.holder_pttl.size() ? attempt.holder_pttl[i] : -1;
        // +1ms: wake just after the key expires, not just before. A block of more than a minute
        // is a series of them (each retry keeps the place), so the socket deadline stays ours.
        Millis block = std::clamp(p >= 0 ? Millis(p + 1) : fallback, Millis(1),
                                  std::min(left, Millis(60'000)));
        longest_block = std::max(longest_block, block);
        workers_[i]->settle_leftover();
        auto done = [round, worker = workers_[i]] {
            worker->answered();
            signal_eventfd(round->answered);
        };
        workers_[i]->post({[round, done, keys, token, block, i](QuorumNode& node) {
                               {
                                   std::lock_guard lock(round->mutex);
                                   if (round->stopped) return done();
                                   ++round->started;
                               }
                               // Woken, handed the lock, timed out or cut short: QuorumTarget
                               // decides from what each node saw.
                               const Deadline sent = BootClock::now();
                               NodeWake w;
                               auto failed =
                                   node_failure([&] { w = node.await_wake(keys, token, block); });
                               {
                                   std::lock_guard lock(round->mutex);
                                   round->seen.handed[i] = w.handed;
                                   if (w.timed_out) round->seen.empty_at[i] = sent;
                                   round->seen.woken[i] = !failed && !w.timed_out && !w.handed;
                               }
                               done();  // first: a finished node must no longer count as lagging
                               {
                                   std::lock_guard lock(round->mutex);
                                   ++round->finished;
                               }
                               round->changed.notify_all();
                           },
                           done, BootClock::now() + block, round->stop.get()});
    }
    const Deadline end = std::min(until + grace, BootClock::now() + longest_block + command);
    std::size_t woke = 0;
    while (woke < need) {
        pollfd p[2] = {{round->answered.get(), POLLIN, 0}, {interrupt, POLLIN, 0}};
        int ready = ::poll(p, interrupt >= 0 ? 2 : 1, millis_until(end));
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0 || (p[1].revents & POLLIN)) break;  // the bound, or a signal
        std::uint64_t count = 0;
        if (::read(round->answered.get(), &count, sizeof count) == sizeof count) woke += count;
    }
    std::unique_lock lock(round->mutex);
    round->stopped = true;
    signal_eventfd(round->stop);
    round->changed.wait_for(lock, 2 * command, [&] { return round->finished == round->started; });
    return round->seen;
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

namespace {

// What finish() asks of each node: the release and, where it was written, the record.
struct NodeFinish {
    ReleaseResult release = ReleaseResult::released;
    std::optional<RecordResult> record;
};

// finish()'s step in steps: the node's finish, and where it failed, the plain release, which is
// a synchronous command (so it blocks(): the node's worker sends it, and the round waits for it).
class FinishOrRelease final : public NodeCall<NodeFinish> {
  public:
    FinishOrRelease(std::unique_ptr<NodeCall<FinishResult>> call, QuorumNode& node,
                    std::function<NodeFinish(QuorumNode&)> release)
        : call_(std::move(call)), node_(node), release_(std::move(release)) {}
    Connection::Waiting waiting() const override { return call_->waiting(); }
    bool sent_all() const override { return !failed_ && call_->sent_all(); }
    std::optional<NodeFinish> step() override {
        if (failed_) return std::nullopt;
        try {
            std::optional<FinishResult> f = call_->step();
            if (f) return NodeFinish{f->release, f->record};
        } catch (const Error&) {
            failed_ = true;  // as finish() below: the release follows
        }
        return std::nullopt;
    }
    bool blocks() const override { return failed_; }
    NodeFinish finish() override {
        if (!failed_) {
            try {
                FinishResult f = call_->finish();
                return NodeFinish{f.release, f.record};
            } catch (const Error&) {
                // (A ReplyLost too: the record may have been written, and is not sent again.)
            }
        }
        return release_(node_);
    }
    void abort() override { call_->abort(); }

  private:
    std::unique_ptr<NodeCall<FinishResult>> call_;
    QuorumNode& node_;
    std::function<NodeFinish(QuorumNode&)> release_;
    bool failed_ = false;
};

}  // namespace

// Waits for every node but one still busy with an earlier command (see gather): that one
// releases in the background while the process lives, or its key expires by its TTL.
QuorumRelease QuorumLock::release(const LockKeys& keys, const std::string& token, Millis keep) {
    auto seen = gather<ReleaseResult>(
        workers_, -1, BootClock::now() + timeouts_.connect + 2 * timeouts_.command,
        [keys, token, keep](std::size_t, QuorumNode& node) {
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
    auto release = [keys, token, keep](QuorumNode& node) {
        try {
            return NodeFinish{node.release(keys, token, keep), std::nullopt};
        } catch (const RedisUnavailable&) {
            return NodeFinish{node.release(keys, token, keep), std::nullopt};
        }
    };
    auto seen = gather<NodeFinish>(
        workers_, -1, BootClock::now() + timeouts_.connect + 2 * timeouts_.command,
        [keys, token, keep, record, release](std::size_t, QuorumNode& node) {
            try {
                FinishResult f = node.finish(keys, token, keep, record);
                return NodeFinish{f.release, f.record};
            } catch (const ReplyLost&) {
                // It may have been written (and released): not sent again.
            } catch (const Error&) {
            }
            return release(node);
        },
        [&](std::size_t, QuorumNode& node) -> std::unique_ptr<NodeCall<NodeFinish>> {
            auto call = node.start_finish(keys, token, keep, record);
            if (!call) return nullptr;
            return std::make_unique<FinishOrRelease>(std::move(call), node, release);
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
        [keys, token, ttl, deadline, replicas](std::size_t, QuorumNode& node) {
            return node.renew(keys, token, ttl, deadline, replicas);
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
    if (first_error && first_error->cancelled) throw Cancelled();
    throw RedisUnavailable(fmt::format(
        "renewed on {} in {}{}", counts(renewed, n, answered), format_duration(elapsed),
        first_error ? fmt::format(" (first error: {})", first_error->message) : std::string()));
}

std::vector<std::optional<RecordResult>> QuorumLock::record_run(const LockKeys& keys,
                                                                const std::string& token,
                                                                const RunRecord& record) {
    auto seen = gather<RecordResult>(
        workers_, cancel_fd_, BootClock::now() + timeouts_.connect + 2 * timeouts_.command,
        [keys, token, record](std::size_t, QuorumNode& node) {
            return node.record(keys, token, record);
        },
        [](const Answers<RecordResult>&) { return false; }, Early::never);
    return seen.results;
}

bool QuorumLock::holds(const LockKeys& keys, const std::string& token) {
    const std::size_t need = majority();
    auto seen = gather<bool>(
        workers_, cancel_fd_, BootClock::now() + timeouts_.connect + timeouts_.command,
        [keys, token](std::size_t, QuorumNode& node) { return node.holds(keys, token); },
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

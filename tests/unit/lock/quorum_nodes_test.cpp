// The quorum's majority logic (QuorumLock) over fake nodes (QuorumNode) that keep a lock's state
// in memory and can be frozen, restarted empty or made to lie: what a majority decides, what a
// failed attempt gives back, and that fences stay above every earlier one, without a server.
#include <gtest/gtest.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <condition_variable>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../eventually.hpp"
#include "lock/node/lock_replies.hpp"
#include "lock/quorum/quorum.hpp"
#include "lock/quorum/quorum_node.hpp"
#include "lock/quorum_wait.hpp"
#include "util/errors.hpp"
#include "util/fd.hpp"
#include "util/signals.hpp"

using namespace redlock;
using std::chrono::milliseconds;

namespace {

// One node's lock in memory: the holder (or the permits' holders, or the shared holders), the
// fence counter and the waiters' queue ordered by ticket, as the scripts keep them. The test
// and the node's worker share it.
struct NodeState {
    std::mutex mutex;
    std::condition_variable changed;
    bool frozen = false;  // every operation waits at the gate until thawed
    int at_gate = 0;      // operations waiting there now

    int permits = 1;
    std::string holder;                    // a plain lock's token ("": free)
    std::map<int, std::string> permit_of;  // permit -> token
    std::set<std::string> shared;          // shared holders
    long long counter = 0;
    std::set<std::pair<long long, std::string>> queue;  // (ticket, token)

    // Lies: the acquire answers this fence, or says it took the lock without taking it.
    std::optional<long long> lie_fence;
    bool lie_acquired = false;
    // A node that draws its fence without the acquire's floor (its clock is ahead of it, or it
    // runs an older script): its fence differs from the others', so the quorum raises them.
    bool ignores_floor = false;

    bool down = false;            // every operation fails as an unreachable node's does
    std::optional<Error> refuse;  // every operation fails with this (a refused password)
    // Runs at the end of each acquire, after its answer is decided (a test's change of state
    // between two attempts).
    std::function<void(NodeState&)> after_acquire;

    long long busy_pttl = 1000;   // a busy reply's holder TTL, which bounds a waiter's block
    std::set<std::string> woken;  // tokens a release woke (a plain wake-up on their lists)
    int aborted = 0;              // calls in steps that a cancel cut short (FakeCall::abort)
    // The hand-off (lib/take.lua): waiters whose acquires asked for it, each holder's fence as
    // its record says (the acquire's, raised by the fence step), and the hand-offs' fences on
    // the waiters' lists. `plain_release`: this node's releases only wake (an older version);
    // `lie_handed`: its hand-offs say this fence, whatever the counter.
    std::set<std::string> asks_hand_off;
    std::map<std::string, long long> fence_of;
    std::map<std::string, long long> handed;
    bool plain_release = false;
    std::optional<long long> lie_handed;
    std::vector<int> wanted;  // the wanted permit each acquire was sent
    int raised = 0;           // fence steps that raised the counter

    // Readable while the node is not frozen: what a NodeCall in steps (FakeCall) polls.
    Fd thawed{::eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK)};

    void freeze() {
        std::lock_guard g(mutex);
        frozen = true;
        std::uint64_t count = 0;
        [[maybe_unused]] auto got = ::read(thawed.get(), &count, sizeof count);
    }
    void thaw() {
        {
            std::lock_guard g(mutex);
            frozen = false;
            std::uint64_t one = 1;
            [[maybe_unused]] auto put = ::write(thawed.get(), &one, sizeof one);
        }
        changed.notify_all();
    }
    // A restart without persistence: the lock, its queue and the counter are gone.
    void restart() {
        std::lock_guard g(mutex);
        holder.clear(), permit_of.clear(), shared.clear(), queue.clear();
        counter = 0;
    }
    bool holds(const std::string& token) {
        if (holder == token || shared.count(token)) return true;
        for (const auto& [p, t] : permit_of)
            if (t == token) return true;
        return false;
    }
    bool queued(const std::string& token) {
        for (const auto& [ticket, t] : queue)
            if (t == token) return true;
        return false;
    }
    void dequeue(const std::string& token) {
        for (auto it = queue.begin(); it != queue.end();)
            it = it->second == token ? queue.erase(it) : std::next(it);
    }
    // The waiter's wake-up list emptied (DEL in the scripts).
    void empty_list(const std::string& token) {
        woken.erase(token);
        handed.erase(token);
    }
    void drop(const std::string& token) {
        if (holder == token) holder.clear();
        shared.erase(token);
        for (auto it = permit_of.begin(); it != permit_of.end();)
            it = it->second == token ? permit_of.erase(it) : std::next(it);
    }
};

// A fake node's operation in steps, as the product's nodes send theirs from the round's thread
// (NodeCall): it polls the node's `thawed`, answers at the first step while the node is not
// frozen, and counts as waiting at the gate while it is; its rest (finish, on the worker) waits
// at the gate as a synchronous operation does.
template <class T>
class FakeCall final : public NodeCall<T> {
  public:
    FakeCall(std::shared_ptr<NodeState> state, std::function<T()> op)
        : s_(std::move(state)), op_(std::move(op)) {}
    ~FakeCall() override { leave_gate(); }
    Connection::Waiting waiting() const override {
        return {s_->thawed.get(), POLLIN, Deadline::max()};
    }
    std::optional<T> step() override {
        {
            std::lock_guard g(s_->mutex);
            if (s_->frozen) {
                if (!at_gate_) ++s_->at_gate, at_gate_ = true;
                s_->changed.notify_all();
                return std::nullopt;
            }
        }
        leave_gate();
        return op_();
    }
    T finish() override {
        leave_gate();
        return op_();
    }
    void abort() override {
        leave_gate();
        std::lock_guard g(s_->mutex);
        ++s_->aborted;
    }

  private:
    void leave_gate() {
        std::lock_guard g(s_->mutex);
        if (at_gate_) --s_->at_gate, at_gate_ = false;
    }
    std::shared_ptr<NodeState> s_;
    std::function<T()> op_;
    bool at_gate_ = false;
};

class FakeNode final : public QuorumNode {
  public:
    // `in_steps`: the node has the split-phase forms of the acquire, the fence step and the
    // finish (FakeCall), as the product's nodes have; else only the synchronous methods.
    FakeNode(std::shared_ptr<NodeState> state, std::string name, bool shared, bool in_steps = false)
        : s_(std::move(state)), name_(std::move(name)), shared_(shared), in_steps_(in_steps) {}

    std::unique_ptr<NodeCall<AcquireResult>> start_acquire(const LockKeys& keys,
                                                           const std::string& token, Millis ttl,
                                                           const HolderInfo*,
                                                           const NodeAcquire& how) override {
        if (!in_steps_) return nullptr;
        return std::make_unique<FakeCall<AcquireResult>>(
            s_, [this, keys, token, ttl, how] { return acquire(keys, token, ttl, nullptr, how); });
    }
    std::unique_ptr<NodeCall<bool>> start_raise_fence(const LockKeys& keys,
                                                      const std::string& token, long long fence,
                                                      int permit) override {
        if (!in_steps_) return nullptr;
        return std::make_unique<FakeCall<bool>>(s_, [this, keys, token, fence, permit] {
            return raise_fence(keys, token, fence, permit);
        });
    }
    std::unique_ptr<NodeCall<FinishResult>> start_finish(const LockKeys& keys,
                                                         const std::string& token, Millis keep,
                                                         const RunRecord& record) override {
        if (!in_steps_) return nullptr;
        return std::make_unique<FakeCall<FinishResult>>(
            s_, [this, keys, token, keep, record] { return finish(keys, token, keep, record); });
    }

    std::string describe() const override { return name_; }
    void set_cancel_fd(int fd) override { cancel_fd_ = fd; }
    Timeouts timeouts() const override { return timeouts_; }
    void set_timeouts(Timeouts t) override { timeouts_ = t; }
    void ensure_connected() override {}

    AcquireResult acquire(const LockKeys&, const std::string& token, Millis, const HolderInfo*,
                          const NodeAcquire& how) override {
        auto g = gate();
        s_->wanted.push_back(how.wanted_permit);
        AcquireResult r;
        if (s_->lie_acquired) {
            r.acquired = true;
            r.fence = s_->counter + 1;
            return r;
        }
        // A free lock is reserved for the queue's head (acquire.lua).
        const bool reserved = !s_->queue.empty() && s_->queue.begin()->second != token;
        bool took = false;
        if (s_->holds(token)) {
            took = true;
        } else if (shared_) {
            took = s_->holder.empty() && !reserved;
            if (took) s_->shared.insert(token);
        } else if (s_->permits > 1) {
            std::vector<bool> free;
            for (int p = 1; p <= s_->permits; ++p) free.push_back(!s_->permit_of.count(p));
            int give = 0;
            if (how.wanted_permit > 0 && free[how.wanted_permit - 1]) give = how.wanted_permit;
            for (int p = 1; p <= s_->permits && give == 0; ++p)
                if (free[p - 1]) give = p;
            if (give > 0 && !reserved) {
                took = true;
                s_->permit_of[give] = token;
                r.permit = give;
                r.free_permits = free;
            }
        } else {
            took = s_->holder.empty() && s_->shared.empty() && !reserved;
            if (took) s_->holder = token;
        }
        const bool asks = how.ticket > 0 && how.hand_off_claim.has_value();
        if (asks) s_->asks_hand_off.insert(token);
        if (took) {
            s_->dequeue(token);
            s_->empty_list(token);
            r.acquired = true;
            // acquire.lua's fence floor (next_fence); permits.lua and shared.lua take none.
            if (how.fence_floor && !s_->ignores_floor && !shared_ && s_->permits == 1)
                s_->counter = std::max(s_->counter, *how.fence_floor);
            r.fence = s_->lie_fence.value_or(++s_->counter);
            s_->fence_of[token] = r.fence;
        } else {
            if (asks) s_->empty_list(token);
            r.holder_pttl = s_->busy_pttl;
            // A holder that recorded its info (a redlock-run): its release wakes the queue.
            if (!s_->holder.empty()) {
                r.holder.emplace();
                r.holder->token = s_->holder;
            }
            if (how.ticket > 0 && !s_->queued(token)) s_->queue.insert({how.ticket, token});
        }
        if (s_->after_acquire) s_->after_acquire(*s_);
        return r;
    }

    bool raise_fence(const LockKeys&, const std::string& token, long long fence,
                     int permit) override {
        auto g = gate();
        bool mine = s_->permits > 1 ? s_->permit_of.count(permit) && s_->permit_of[permit] == token
                                    : s_->holds(token);
        if (!mine) return false;
        s_->counter = std::max(s_->counter, fence);
        s_->fence_of[token] = fence;
        ++s_->raised;
        return true;
    }

    RenewResult renew(const LockKeys&, const std::string& token, Millis, Deadline,
                      const ReplicaPolicy&) override {
        auto g = gate();
        return s_->holds(token) ? RenewResult::renewed : RenewResult::not_owner;
    }

    ReleaseResult release(const LockKeys&, const std::string& token, Millis) override {
        auto g = gate();
        if (!s_->holds(token)) return ReleaseResult::absent;
        s_->drop(token);
        if (s_->queue.empty()) return ReleaseResult::released;
        const std::string head = s_->queue.begin()->second;
        if (s_->plain_release || !s_->asks_hand_off.count(head)) {
            // release_lock wakes the queue's head (lib/queue.lua).
            s_->woken.insert(head);
            return ReleaseResult::released;
        }
        // hand_off_head (lib/take.lua): the lock taken for the head with fence_from's fence (one
        // above the counter and the releasing holder's fence), and the next waiter told to look.
        const long long fence =
            std::max(s_->counter, s_->fence_of.count(token) ? s_->fence_of[token] : 0) + 1;
        s_->counter = fence;
        s_->holder = head;
        s_->dequeue(head);
        s_->handed[head] = s_->lie_handed.value_or(fence);
        s_->fence_of[head] = fence;
        if (!s_->queue.empty()) s_->woken.insert(s_->queue.begin()->second);
        return ReleaseResult::released;
    }
    FinishResult finish(const LockKeys& keys, const std::string& token, Millis keep,
                        const RunRecord&) override {
        return {release(keys, token, keep), {}};
    }
    void step_back(const LockKeys&, const std::string& token, long long ticket, Millis) override {
        auto g = gate();
        s_->drop(token);
        s_->empty_list(token);
        if (!s_->queued(token)) s_->queue.insert({ticket, token});
    }
    void leave_queue(const LockKeys&, const std::string& token) override {
        auto g = gate();
        s_->dequeue(token);
        s_->empty_list(token);
    }
    void settle_permit(const LockKeys&, const std::string& token, int permit) override {
        auto g = gate();
        for (auto it = s_->permit_of.begin(); it != s_->permit_of.end();)
            it = it->second == token && it->first != permit ? s_->permit_of.erase(it)
                                                            : std::next(it);
        s_->dequeue(token);
    }
    bool abandon(const LockKeys&, const std::string& token) override {
        auto g = gate();
        bool had = s_->holds(token);
        s_->drop(token);
        s_->dequeue(token);
        s_->empty_list(token);
        return had;
    }
    // BLPOP on the token's wake-up list: a wake-up already there is taken at once.
    NodeWake await_wake(const LockKeys&, const std::string& token, Millis block) override {
        gate().unlock();
        const Deadline end = BootClock::now() + block;
        for (;;) {
            {
                std::lock_guard g(s_->mutex);
                if (s_->woken.erase(token)) return {};
                if (auto it = s_->handed.find(token); it != s_->handed.end()) {
                    NodeWake w;
                    w.handed = it->second;
                    s_->handed.erase(it);
                    return w;
                }
            }
            pollfd p{cancel_fd_, POLLIN, 0};
            if (::poll(&p, cancel_fd_ >= 0 ? 1 : 0, 1) > 0) return {};
            if (BootClock::now() >= end) return {true, std::nullopt};
        }
    }
    RecordResult record(const LockKeys&, const std::string& token, const RunRecord&) override {
        auto g = gate();
        RecordResult r;
        r.still_held = s_->holds(token);
        return r;
    }
    bool holds(const LockKeys&, const std::string& token) override {
        auto g = gate();
        return s_->holds(token);
    }
    Connection& connection() override {
        throw Error("a fake node has no connection", exit_code::internal);
    }

  private:
    // Holds the state's mutex for the operation, after waiting while the node is frozen.
    std::unique_lock<std::mutex> gate() {
        std::unique_lock g(s_->mutex);
        ++s_->at_gate;
        s_->changed.notify_all();
        s_->changed.wait(g, [&] { return !s_->frozen; });
        --s_->at_gate;
        if (s_->down) throw RedisUnavailable(name_ + ": Connection refused");
        if (s_->refuse) throw *s_->refuse;
        return g;
    }

    std::shared_ptr<NodeState> s_;
    std::string name_;
    bool shared_;
    bool in_steps_;
    int cancel_fd_ = -1;
    Timeouts timeouts_{Millis(1000), Millis(1000)};
};

// The node timeouts bound only the rounds that wait for every node (a release, a give-back): far
// beyond anything a fake takes, so that no test depends on how fast a thread runs.
const Timeouts generous{Millis(10'000), Millis(10'000)};
const Millis long_ttl{60'000};

// Whether the Quorums a test builds have nodes in steps: each QuorumNodes test runs with both
// (the parameter), so that the majority logic is proved over either transport.
bool nodes_in_steps = false;

struct Quorum {
    explicit Quorum(std::size_t n = 3, int permits = 1, bool shared = false) {
        std::vector<std::unique_ptr<QuorumNode>> fakes;
        for (std::size_t i = 0; i < n; ++i) {
            nodes.push_back(std::make_shared<NodeState>());
            nodes.back()->permits = permits;
            fakes.push_back(std::make_unique<FakeNode>(nodes.back(), "node" + std::to_string(i),
                                                       shared, nodes_in_steps));
        }
        lock = std::make_unique<QuorumLock>(std::move(fakes), generous, ReplicaPolicy{}, permits,
                                            shared);
    }
    // What node i shows, read under its lock.
    template <class F>
    auto at(std::size_t i, F f) {
        std::lock_guard g(nodes[i]->mutex);
        return f(*nodes[i]);
    }
    bool blocked(std::size_t i) {
        return at(i, [](NodeState& s) { return s.at_gate > 0; });
    }
    std::vector<std::shared_ptr<NodeState>> nodes;
    std::unique_ptr<QuorumLock> lock;  // after nodes: its workers go first
};

const LockKeys keys = LockKeys::make("job", "test:");

// The QuorumNodes tests, over nodes whose operations run on their workers (OnWorkers) and over
// nodes whose hot operations go out in steps from the round's thread (InSteps).
class QuorumNodes : public ::testing::TestWithParam<bool> {
  protected:
    void SetUp() override { nodes_in_steps = GetParam(); }
    void TearDown() override { nodes_in_steps = false; }
};

}  // namespace

INSTANTIATE_TEST_SUITE_P(Transport, QuorumNodes, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                             return info.param ? "InSteps" : "OnWorkers";
                         });

TEST_P(QuorumNodes, AFrozenMinorityDoesNotDelayTheAcquire) {
    Quorum q;
    q.nodes[2]->freeze();
    auto attempt = std::async(std::launch::async,
                              [&] { return q.lock->acquire(keys, "t1", long_ttl, nullptr); });
    // The acquire returns while node 2 still holds its command: it never waited for it.
    bool returned =
        eventually([&] { return attempt.wait_for(milliseconds(0)) == std::future_status::ready; });
    EXPECT_TRUE(returned);
    EXPECT_TRUE(eventually([&] { return q.blocked(2); }));  // its worker may get there last
    q.nodes[2]->thaw();
    QuorumAttempt a = attempt.get();
    EXPECT_TRUE(a.acquired);
    EXPECT_EQ(a.accepted, 2u);
    EXPECT_EQ(a.answered, 2u);
    EXPECT_GT(a.fence, 0);
    // The frozen node's late acquire took the key for the holder; the release, queued behind it
    // on that node, gives it back.
    QuorumRelease r = q.lock->release(keys, "t1", Millis(0));
    EXPECT_GE(r.released, 2u);
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_TRUE(eventually([&] {
            return q.at(i, [](NodeState& s) { return s.counter > 0 && s.holder.empty(); });
        })) << i;
}

// Nodes in steps: a node that answers the acquire only after the round was decided without it
// has its answer read by the next round that involves it, before that round's own step: the
// finish reaches it in the same round when it has answered by then, and after its answer (on its
// worker, not waited for) when it has not.
TEST(QuorumSteps, ALateAcquireIsReadBeforeTheFinishAndTheFinishStillReachesItsNode) {
    nodes_in_steps = true;
    Quorum q;
    nodes_in_steps = false;
    q.nodes[2]->freeze();
    QuorumAttempt a = q.lock->acquire(keys, "t1", long_ttl, nullptr);
    ASSERT_TRUE(a.acquired);
    EXPECT_EQ(a.answered, 2u);
    EXPECT_TRUE(q.blocked(2));  // its call is still out there, unanswered
    q.nodes[2]->thaw();
    // Nothing read node 2's answer yet: it took the key only now, when the finish looks first.
    EXPECT_EQ(q.at(2, [](NodeState& s) { return s.holder; }), "");
    QuorumRelease r = q.lock->finish(keys, "t1", Millis(0), RunRecord{});
    EXPECT_EQ(r.released, 3u);  // node 2's acquire was read, and the finish waited for its answer
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_EQ(q.at(i, [](NodeState& s) { return s.holder; }), "") << i;
    // Its acquire's own draw, the same as the others' (the fence floor): no fence step.
    const long long drawn = q.at(2, [](NodeState& s) { return s.counter; });
    EXPECT_EQ(drawn, a.fence);

    // The same with node 2 still frozen at the finish: not waited for; its acquire and then its
    // finish go on on its worker once it answers.
    q.nodes[2]->freeze();
    ASSERT_TRUE(q.lock->acquire(keys, "t2", long_ttl, nullptr).acquired);
    QuorumRelease late = q.lock->finish(keys, "t2", Millis(0), RunRecord{});
    EXPECT_EQ(late.released, 2u);
    q.nodes[2]->thaw();
    EXPECT_TRUE(eventually([&] {
        return q.at(2, [&](NodeState& s) { return s.counter > drawn && s.holder.empty(); });
    }));
}

// Nodes in steps: a signal (the cancel descriptor) ends the round's calls at once, unanswered;
// the failed attempt's give-back then goes to every node.
TEST(QuorumSteps, ACancelEndsTheRoundOfCallsInSteps) {
    nodes_in_steps = true;
    Quorum q;
    nodes_in_steps = false;
    Fd cancel(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    ASSERT_TRUE(cancel);
    q.lock->set_cancel_fd(cancel.get());
    for (auto& node : q.nodes) node->freeze();
    auto attempt = std::async(std::launch::async,
                              [&] { return q.lock->acquire(keys, "t1", long_ttl, nullptr); });
    for (std::size_t i = 0; i < 3; ++i) EXPECT_TRUE(eventually([&] { return q.blocked(i); })) << i;
    std::uint64_t one = 1;
    ASSERT_EQ(::write(cancel.get(), &one, sizeof one), static_cast<ssize_t>(sizeof one));
    // Each node's call was cut short while the node was still frozen.
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_TRUE(eventually([&] {
            return q.at(i, [](NodeState& s) { return s.aborted; }) == 1;
        })) << i;
    for (auto& node : q.nodes) node->thaw();
    QuorumAttempt a = attempt.get();
    EXPECT_FALSE(a.acquired);
    EXPECT_EQ(a.answered, 0u);
    ASSERT_TRUE(a.first_error);
    EXPECT_NE(a.first_error->message.find(Cancelled().what()), std::string::npos)
        << a.first_error->message;
    // No node ever ran the acquire (a cut-short call is not finished later).
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_TRUE(q.at(i, [](NodeState& s) { return s.wanted.empty() && s.holder.empty(); }))
            << i;
    }
}

TEST_P(QuorumNodes, ALateNodeThatTookTheLockAfterTheAttemptGaveUpGivesItBack) {
    Quorum q;
    q.at(1, [](NodeState& s) { s.holder = "other"; });
    q.at(2, [](NodeState& s) { s.holder = "other"; });
    q.nodes[0]->freeze();
    // Two busy nodes and one frozen: the attempt can only give up when its validity has run
    // out (the ttl), and node 0 stays frozen until then, however slow the machine.
    QuorumAttempt a = q.lock->acquire(keys, "t1", Millis(200), nullptr);
    EXPECT_FALSE(a.acquired);
    EXPECT_EQ(a.answered, 2u);
    EXPECT_TRUE(eventually([&] { return q.blocked(0); }));
    q.nodes[0]->thaw();
    // Node 0 now takes the free key for t1 (drawing a fence), and the give-back queued behind
    // it deletes it.
    EXPECT_TRUE(eventually(
        [&] { return q.at(0, [](NodeState& s) { return s.counter > 0 && s.holder.empty(); }); }));
    EXPECT_EQ(q.at(1, [](NodeState& s) { return s.holder; }), "other");
}

TEST_P(QuorumNodes, ARestartedEmptyNodeIsOutvotedAndTheFenceKeepsGrowing) {
    Quorum q;
    QuorumAttempt first = q.lock->acquire(keys, "t1", long_ttl, nullptr);
    ASSERT_TRUE(first.acquired);
    q.lock->release(keys, "t1", Millis(0));
    // Node 0 restarts without its data; node 2 does not answer. The majority left is node 0
    // (counter 0) and node 1, which shares a node with the first majority.
    q.nodes[0]->restart();
    q.nodes[2]->freeze();
    QuorumAttempt second = q.lock->acquire(keys, "t2", long_ttl, nullptr);
    ASSERT_TRUE(second.acquired);
    EXPECT_GT(second.fence, first.fence);
    // The empty node's counter is raised with the rest, so it cannot hand out an old fence.
    EXPECT_EQ(q.at(0, [](NodeState& s) { return s.counter; }), second.fence);
    q.nodes[2]->thaw();
}

// Node 2 is busy in the two tests below, so that the lying node's answer is needed for a
// majority and is always seen before the attempt decides.
TEST_P(QuorumNodes, ANodeThatAnswersAFenceAtTheLimitDoesNotCount) {
    Quorum q;
    q.at(0, [](NodeState& s) { s.lie_fence = fence_limit - 1; });
    q.at(2, [](NodeState& s) { s.holder = "other"; });
    QuorumAttempt a = q.lock->acquire(keys, "t1", long_ttl, nullptr);
    // The quorum's fence would be the limit itself (2^62): that node counts as failed, so node
    // 1 alone accepted, and nothing was raised anywhere.
    EXPECT_FALSE(a.acquired);
    EXPECT_EQ(a.accepted, 1u);
    EXPECT_EQ(a.fence, 0);
    ASSERT_TRUE(a.first_error);
    EXPECT_NE(a.first_error->message.find("outside 1..2^62-1"), std::string::npos)
        << a.first_error->message;
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_EQ(q.at(i, [](NodeState& s) { return s.raised; }), 0) << i;
    // What node 0 and node 1 gave, the attempt gave back.
    EXPECT_EQ(q.at(0, [](NodeState& s) { return s.holder; }), "");
    EXPECT_EQ(q.at(1, [](NodeState& s) { return s.holder; }), "");
}

TEST_P(QuorumNodes, AFenceFarAheadStaysBelowTheLimitAndFencesKeepGrowing) {
    Quorum q;
    const long long far = fence_limit / 2;
    q.at(0, [](NodeState& s) { s.lie_fence = fence_limit / 2; });
    q.at(2, [](NodeState& s) { s.holder = "other"; });
    QuorumAttempt a = q.lock->acquire(keys, "t1", long_ttl, nullptr);
    ASSERT_TRUE(a.acquired);
    // What the man page allows: the fence jumps, stays below 2^62, and the next one is above.
    EXPECT_EQ(a.fence, far + 1);
    q.lock->release(keys, "t1", Millis(0));
    q.at(0, [](NodeState& s) { s.lie_fence.reset(); });
    q.nodes[0]->restart();
    QuorumAttempt b = q.lock->acquire(keys, "t2", long_ttl, nullptr);
    ASSERT_TRUE(b.acquired);
    EXPECT_GT(b.fence, a.fence);
    EXPECT_LT(b.fence, fence_limit);
}

TEST_P(QuorumNodes, ANodeThatClaimsALockItDoesNotHoldCannotMakeAMajority) {
    Quorum q;
    q.at(0, [](NodeState& s) { s.lie_acquired = true; });
    q.at(2, [](NodeState& s) { s.holder = "other"; });
    QuorumAttempt a = q.lock->acquire(keys, "t1", long_ttl, nullptr);
    // Two nodes said yes, but the token-checked fence step finds the key on one: not held.
    EXPECT_FALSE(a.acquired);
    EXPECT_NE(a.why.find("raised on only 1 of 3"), std::string::npos) << a.why;
    // What the attempt took, it gave back.
    EXPECT_EQ(q.at(1, [](NodeState& s) { return s.holder; }), "");
    EXPECT_EQ(q.at(2, [](NodeState& s) { return s.holder; }), "other");
}

TEST_P(QuorumNodes, PermitsThatDifferAcrossNodesAreASplitAndTheNextAttemptAgrees) {
    Quorum q(3, 2);
    q.at(0, [](NodeState& s) { s.permit_of[1] = "a"; });
    q.at(1, [](NodeState& s) { s.permit_of[2] = "b"; });
    q.at(2, [](NodeState& s) { s.permit_of = {{1, "a"}, {2, "b"}}; });
    // Node 0 gives permit 2, node 1 permit 1, node 2 none: no permit on a majority.
    QuorumAttempt a = q.lock->acquire(keys, "t1", long_ttl, nullptr);
    EXPECT_FALSE(a.acquired);
    EXPECT_TRUE(a.split);
    EXPECT_EQ(a.accepted, 1u);
    // Each permit the attempt took is given back.
    EXPECT_FALSE(q.at(0, [](NodeState& s) { return s.holds("t1"); }));
    EXPECT_FALSE(q.at(1, [](NodeState& s) { return s.holds("t1"); }));
    // Holder "b" leaves node 2. The next attempt asks every node for the permit most of them
    // had free (1: a tie, the lowest), which node 1 and node 2 give; node 0 gives 2 again and
    // settles it back.
    q.at(2, [](NodeState& s) { s.permit_of.erase(2), s.permit_of.erase(1); });
    QuorumAttempt b = q.lock->acquire(keys, "t1", long_ttl, nullptr);
    ASSERT_TRUE(b.acquired);
    EXPECT_EQ(b.permit, 1);
    EXPECT_FALSE(b.split);
    EXPECT_TRUE(eventually([&] {
        return q.at(0, [](NodeState& s) { return s.wanted.size() == 2 && !s.holds("t1"); });
    }));
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_EQ(q.at(i, [](NodeState& s) { return s.wanted.back(); }), 1) << i;
    EXPECT_EQ(q.at(1, [](NodeState& s) { return s.permit_of[1]; }), "t1");
    EXPECT_EQ(q.at(2, [](NodeState& s) { return s.permit_of[1]; }), "t1");
}

// The permit a holder is told (REDLOCK_PERMIT) is the one a majority gave it, not the first.
TEST_P(QuorumNodes, AHolderIsToldThePermitTheMajorityGaveIt) {
    Quorum q(3, 3);
    for (std::size_t i = 0; i < 3; ++i) q.at(i, [](NodeState& s) { s.permit_of[1] = "a"; });
    q.at(0, [](NodeState& s) { s.permit_of[2] = "b"; });
    // Nodes 1 and 2 give permit 2, node 0 permit 3 (which it gives back).
    QuorumAttempt a = q.lock->acquire(keys, "t", long_ttl, nullptr);
    ASSERT_TRUE(a.acquired);
    EXPECT_EQ(a.permit, 2);
    EXPECT_EQ(a.accepted, 2u);
    EXPECT_TRUE(eventually([&] { return !q.at(0, [](NodeState& s) { return s.holds("t"); }); }));
}

TEST_P(QuorumNodes, SharedHoldersShareAMajorityThatAnExclusiveHolderCannot) {
    Quorum shared(3, 1, true);
    shared.at(0, [](NodeState& s) { s.holder = "x"; });
    shared.at(1, [](NodeState& s) { s.holder = "x"; });
    // An exclusive holder on a majority: a shared run takes node 2 alone, and gives it back.
    QuorumAttempt a = shared.lock->acquire(keys, "s1", long_ttl, nullptr);
    EXPECT_FALSE(a.acquired);
    EXPECT_TRUE(shared.at(2, [](NodeState& s) { return s.shared.empty(); }));
    shared.at(0, [](NodeState& s) { s.holder.clear(); });
    shared.at(1, [](NodeState& s) { s.holder.clear(); });
    EXPECT_TRUE(shared.lock->acquire(keys, "s1", long_ttl, nullptr).acquired);
    EXPECT_TRUE(shared.lock->acquire(keys, "s2", long_ttl, nullptr).acquired);
    EXPECT_TRUE(shared.lock->holds(keys, "s1"));
    EXPECT_TRUE(shared.lock->holds(keys, "s2"));
    // An exclusive run over the same nodes (they hold two shared holders) is refused everywhere.
    Quorum exclusive(3);
    for (std::size_t i = 0; i < 3; ++i)
        exclusive.at(i, [&](NodeState& s) { s.shared = {"s1", "s2"}; });
    EXPECT_FALSE(exclusive.lock->acquire(keys, "e", long_ttl, nullptr).acquired);
}

// Nodes given the same fence floor draw the same fence: the quorum takes it as it is, with no
// fence step (one round, as one node's acquire), and the next holder's is above it.
TEST_P(QuorumNodes, NodesThatDrawOneFenceAlikeNeedNoFenceStep) {
    Quorum q;
    QuorumAttempt a = q.lock->acquire(keys, "t1", long_ttl, nullptr);
    ASSERT_TRUE(a.acquired);
    // (A node's acquire may still be on its way when the majority decided.)
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_TRUE(eventually([&] {
            return q.at(i, [](NodeState& s) { return s.counter; }) == a.fence;
        })) << i;
        EXPECT_EQ(q.at(i, [](NodeState& s) { return s.raised; }), 0) << i;
    }
    q.lock->release(keys, "t1", Millis(0));
    QuorumAttempt b = q.lock->acquire(keys, "t2", long_ttl, nullptr);
    ASSERT_TRUE(b.acquired);
    EXPECT_GT(b.fence, a.fence);
}

// Fences drawn differently (a node's clock or counter ahead of the floor) are raised to one
// above the highest, as without the floor.
TEST_P(QuorumNodes, NodesThatDrawDifferentFencesAreRaisedToOneAboveTheHighest) {
    Quorum q;
    const long long ahead = 8'000'000'000'000'000LL;
    q.at(0, [&](NodeState& s) { s.ignores_floor = true, s.counter = ahead; });
    QuorumAttempt a = q.lock->acquire(keys, "t1", long_ttl, nullptr);
    ASSERT_TRUE(a.acquired);
    // On the wall clock: under a sanitizer on a loaded machine (ci44's ASan pass) node 0 can
    // answer after nodes 1 and 2 decided the round; they drew alike, so that is the fence, with
    // no step (NodesThatDrawOneFenceAlikeNeedNoFenceStep). Node 0's counter is checked when it
    // was in the round.
    if (a.accepted < 3) return;
    EXPECT_EQ(a.fence, ahead + 2);
    EXPECT_TRUE(eventually([&] {
        int raised = 0;
        for (std::size_t i = 0; i < 3; ++i)
            raised += q.at(i, [](NodeState& s) { return s.raised; });
        return raised >= 2;
    }));
}

// Alike is not enough while the fence step has other work: a waiter that a node refused leaves
// its queue there in that step, so the step runs.
TEST_P(QuorumNodes, AWaiterTakingAMajorityLeavesTheQueueOfTheNodeThatRefusedIt) {
    Quorum q;
    q.at(2, [](NodeState& s) { s.holder = "x"; });
    QuorumAttempt a = q.lock->acquire(keys, "A", long_ttl, nullptr, 100);
    ASSERT_TRUE(a.acquired);
    EXPECT_TRUE(eventually([&] { return !q.at(2, [](NodeState& s) { return s.queued("A"); }); }));
    EXPECT_EQ(q.at(0, [](NodeState& s) { return s.raised; }) +
                  q.at(1, [](NodeState& s) { return s.raised; }),
              2);
}

TEST_P(QuorumNodes, AWaiterThatTookANodeButNoMajorityKeepsItsPlaceThere) {
    Quorum q;
    // The holder's key expired on node 0 only.
    q.at(1, [](NodeState& s) { s.holder = "x"; });
    q.at(2, [](NodeState& s) { s.holder = "x"; });
    QuorumAttempt a = q.lock->acquire(keys, "A", long_ttl, nullptr, 100);
    EXPECT_FALSE(a.acquired);
    // Node 0 is given back, and A stays queued there at its ticket, as on the busy nodes.
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_TRUE(q.at(i, [](NodeState& s) { return s.queued("A"); })) << i;
        EXPECT_FALSE(q.at(i, [](NodeState& s) { return s.holder == "A"; })) << i;
    }
    // A later waiter finds node 0 reserved for A, and is queued behind it everywhere.
    EXPECT_FALSE(q.lock->acquire(keys, "B", long_ttl, nullptr, 200).acquired);
    EXPECT_EQ(q.at(0, [](NodeState& s) { return s.holder; }), "");
    // The holder leaves: B tries first and is still refused; A, the earlier ticket, gets it.
    for (std::size_t i = 1; i < 3; ++i) q.at(i, [](NodeState& s) { s.holder.clear(); });
    EXPECT_FALSE(q.lock->acquire(keys, "B", long_ttl, nullptr, 200).acquired);
    QuorumAttempt won = q.lock->acquire(keys, "A", long_ttl, nullptr, 100);
    ASSERT_TRUE(won.acquired);
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_TRUE(eventually([&] {
            return !q.at(i, [](NodeState& s) { return s.queued("A"); });
        })) << i;
    q.lock->release(keys, "A", Millis(0));
    EXPECT_TRUE(q.lock->acquire(keys, "B", long_ttl, nullptr, 200).acquired);
}

TEST_P(QuorumNodes, ARenewalNeedsAMajorityAndDoesNotWaitForAFrozenNode) {
    Quorum q;
    ASSERT_TRUE(q.lock->acquire(keys, "t1", long_ttl, nullptr).acquired);
    q.nodes[2]->freeze();
    auto renewal = std::async(std::launch::async, [&] {
        return q.lock->renew(keys, "t1", long_ttl, BootClock::now() + long_ttl);
    });
    bool returned =
        eventually([&] { return renewal.wait_for(milliseconds(0)) == std::future_status::ready; });
    EXPECT_TRUE(returned);
    // Node 2's renewal never answered: it waits at the frozen gate (its worker may reach the gate
    // only after the majority decided: ci32's TSan pass saw it not there yet).
    EXPECT_TRUE(eventually([&] { return q.blocked(2); }));
    q.nodes[2]->thaw();
    EXPECT_EQ(renewal.get(), RenewResult::renewed);
    // The key gone from two nodes (expired, or deleted from outside): no majority can be had
    // again, so the renewal says the lock is lost rather than unreachable.
    EXPECT_TRUE(eventually([&] { return !q.blocked(2); }));
    q.at(0, [](NodeState& s) { s.holder.clear(); });
    q.at(1, [](NodeState& s) { s.holder = "other"; });
    EXPECT_EQ(q.lock->renew(keys, "t1", long_ttl, BootClock::now() + long_ttl),
              RenewResult::not_owner);
    EXPECT_FALSE(q.lock->holds(keys, "t1"));
}

TEST_P(QuorumNodes, AMajorityOfWakeUpsEndsTheWaitWithoutTheFrozenNode) {
    Quorum q;
    for (std::size_t i = 0; i < 2; ++i)
        q.at(i, [](NodeState& s) { s.holder = "x", s.busy_pttl = long_ttl.count(); });
    // Node 2 freezes during the attempt, which gives up at its ttl (0 and 1 are busy); it is
    // still frozen when the wait begins, so its wake-up wait never starts.
    q.nodes[2]->freeze();
    QuorumAttempt a = q.lock->acquire(keys, "w", Millis(200), nullptr, 100);
    ASSERT_FALSE(a.acquired);
    ASSERT_EQ(a.holder_pttl[0], long_ttl.count());
    // The holder released on node 0 and node 1 and handed the lock on to the waiter.
    for (std::size_t i = 0; i < 2; ++i) q.at(i, [](NodeState& s) { s.woken.insert("w"); });
    auto wait = std::async(std::launch::async, [&] {
        q.lock->await_wake(keys, "w", a, BootClock::now() + long_ttl, -1);
    });
    bool returned =
        eventually([&] { return wait.wait_for(milliseconds(0)) == std::future_status::ready; });
    EXPECT_TRUE(returned);
    EXPECT_TRUE(eventually([&] { return q.blocked(2); }));
    q.at(2, [](NodeState& s) { s.woken.insert("w"); });  // lets a broken wait end too
    q.nodes[2]->thaw();
    wait.get();
    EXPECT_TRUE(q.at(0, [](NodeState& s) { return s.woken.empty(); }));
}

namespace {

// What contenders on several hosts (a QuorumLock each, over the same five nodes) saw: holders at
// once, fences not above every earlier one, acquisitions, and those during which no fence step
// ran anywhere. `before`, when given, changes a node at random before each attempt.
struct Contention {
    int overlaps = 0, bad_fences = 0, held = 0, without_step = 0;
};
Contention contend(int contenders, int attempts,
                   const std::function<void(std::vector<std::shared_ptr<NodeState>>&,
                                            std::mt19937&)>& before = nullptr) {
    constexpr std::size_t n = 5;
    std::vector<std::shared_ptr<NodeState>> nodes;
    for (std::size_t i = 0; i < n; ++i) nodes.push_back(std::make_shared<NodeState>());
    auto raised = [&] {
        int sum = 0;
        for (auto& node : nodes) {
            std::lock_guard g(node->mutex);
            sum += node->raised;
        }
        return sum;
    };
    std::mutex check;
    Contention seen;
    int holding = 0;
    long long last_fence = 0;
    std::vector<std::thread> runs;
    for (int c = 0; c < contenders; ++c)
        runs.emplace_back([&, c] {
            std::vector<std::unique_ptr<QuorumNode>> fakes;
            for (std::size_t i = 0; i < n; ++i)
                fakes.push_back(std::make_unique<FakeNode>(nodes[i], "node", false));
            QuorumLock lock(std::move(fakes), generous, ReplicaPolicy{});
            const std::string token = "c" + std::to_string(c);
            std::mt19937 random(static_cast<unsigned>(c) + 1);
            for (int k = 0; k < attempts; ++k) {
                if (before) before(nodes, random);
                const int raised_before = raised();
                QuorumAttempt a = lock.acquire(keys, token, long_ttl, nullptr);
                if (!a.acquired) continue;
                {
                    std::lock_guard g(check);
                    seen.overlaps += holding++ > 0;
                    seen.bad_fences += a.fence <= last_fence;
                    last_fence = std::max(last_fence, a.fence);
                    ++seen.held;
                    // Another contender's step may count here too: only "none at all" is told.
                    seen.without_step += raised() == raised_before;
                }
                std::this_thread::yield();
                {
                    std::lock_guard g(check);
                    --holding;
                }
                lock.release(keys, token, Millis(0));
            }
        });
    for (auto& r : runs) r.join();
    return seen;
}

}  // namespace

// The invariant under contention: runs never hold the lock together, and each holder's fence is
// above every earlier one.
TEST_P(QuorumNodes, ContendersNeverHoldTogetherAndFencesGrow) {
    Contention seen = contend(4, 150);
    EXPECT_EQ(seen.overlaps, 0);
    EXPECT_EQ(seen.bad_fences, 0);
    EXPECT_GT(seen.held, 0);
}

// The same while the nodes' fences disagree at random: a node drawing without the acquire's
// floor (its clock ahead, an older script), a counter jumping ahead (a clock stepped forward).
// Attempts whose majority drew one fence alike skip the fence step, the others raise: both
// happen, and the fences still only grow.
TEST_P(QuorumNodes, FencesGrowWhetherTheNodesDrawThemAlikeOrNot) {
    Contention seen = contend(3, 120, [](auto& nodes, std::mt19937& random) {
        NodeState& chaos = *nodes[random() % nodes.size()];
        std::lock_guard g(chaos.mutex);
        switch (random() % 4) {
            case 0:
                chaos.ignores_floor = !chaos.ignores_floor;
                break;
            case 1:
                chaos.counter += 1 + static_cast<long long>(random() % 5'000'000);
                break;
            default:
                break;
        }
    });
    EXPECT_EQ(seen.overlaps, 0);
    EXPECT_EQ(seen.bad_fences, 0);
    EXPECT_GT(seen.without_step, 0);
    EXPECT_GT(seen.held - seen.without_step, 0);  // some raised
}

namespace {

// The one wait loop (waiter.hpp) over the quorum's target (quorum_wait.hpp), each run with a
// QuorumLock of its own over the same fake nodes, as runs on different hosts have.
class QuorumWait : public ::testing::Test {
  protected:
    // The signals stay blocked after SignalEvents is gone; restored (after draining) so that
    // later tests start as they would (waiter_test.cpp says why).
    ~QuorumWait() override {
        while (signals.next()) {
        }
        pthread_sigmask(SIG_SETMASK, &signals.original_mask(), nullptr);
    }

    void make_nodes(std::size_t n, int permits = 1) {
        for (std::size_t i = 0; i < n; ++i) {
            nodes.push_back(std::make_shared<NodeState>());
            nodes.back()->permits = permits;
        }
    }
    std::unique_ptr<QuorumLock> lock_over_nodes(int permits = 1) {
        std::vector<std::unique_ptr<QuorumNode>> fakes;
        for (std::size_t i = 0; i < nodes.size(); ++i)
            fakes.push_back(
                std::make_unique<FakeNode>(nodes[i], "node" + std::to_string(i), false));
        return std::make_unique<QuorumLock>(std::move(fakes), generous, ReplicaPolicy{}, permits);
    }
    template <class F>
    auto at(std::size_t i, F f) {
        std::lock_guard g(nodes[i]->mutex);
        return f(*nodes[i]);
    }
    WaitResult wait_for_lock(QuorumLock& lock, const std::string& token, Millis wait,
                             int permits = 1, QuorumAttempt* last = nullptr) {
        QuorumTarget target(lock, keys, token, long_ttl, nullptr, wait > Millis(0), permits, false);
        WaitResult r = acquire_waiting(target, keys, long_ttl, wait, signals, {}, boot_clock());
        if (last) *last = target.last();
        return r;
    }

    SignalEvents signals;  // before any thread starts: they inherit the blocked mask
    std::vector<std::shared_ptr<NodeState>> nodes;
};

}  // namespace

// FIFO across the quorum: waiters that joined one after another take the lock in that order,
// one at a time, each woken by the release before it (no waiter looks again by its TTL: the
// holder's is a minute), with fences that only grow.
TEST_F(QuorumWait, WaitersTakeTheLockInTheOrderTheyCameOneAtATime) {
    make_nodes(3);
    for (std::size_t i = 0; i < 3; ++i)
        at(i, [](NodeState& s) { s.holder = "h", s.busy_pttl = long_ttl.count(); });
    std::mutex check;
    std::vector<std::string> order;
    std::vector<long long> fences;
    int holding = 0, overlaps = 0;
    std::vector<std::future<void>> runs;
    for (int w = 1; w <= 4; ++w) {
        const std::string token = "w" + std::to_string(w);
        runs.push_back(std::async(std::launch::async, [&, token] {
            auto lock = lock_over_nodes();
            QuorumAttempt last;
            WaitResult r = wait_for_lock(*lock, token, Millis(60'000), 1, &last);
            if (!r.last.acquired) return;
            {
                std::lock_guard g(check);
                overlaps += holding++ > 0;
                order.push_back(token);
                fences.push_back(last.fence);
            }
            std::this_thread::yield();
            {
                std::lock_guard g(check);
                --holding;
            }
            lock->release(keys, token, Millis(0));
        }));
        // Queued on every node before the next one starts: its ticket is the earlier one.
        for (std::size_t i = 0; i < 3; ++i)
            ASSERT_TRUE(
                eventually([&] { return at(i, [&](NodeState& s) { return s.queued(token); }); }));
    }
    // The holder releases everywhere; each release wakes the queue's head.
    for (std::size_t i = 0; i < 3; ++i)
        at(i, [](NodeState& s) {
            s.holder.clear();
            s.woken.insert(s.queue.begin()->second);
        });
    for (auto& r : runs) r.get();
    EXPECT_EQ(order, (std::vector<std::string>{"w1", "w2", "w3", "w4"}));
    EXPECT_EQ(overlaps, 0);
    for (std::size_t k = 1; k < fences.size(); ++k) EXPECT_GT(fences[k], fences[k - 1]) << k;
    // Every node ends free with an empty queue; a node's last release or leave may still be on
    // its way (a round is decided by a majority and the rest go on in the background).
    for (std::size_t i = 0; i < 3; ++i)
        EXPECT_TRUE(eventually([&] {
            return at(i, [](NodeState& s) { return s.queue.empty() && s.holder.empty(); });
        })) << i;
}

// A run that does not wait tries again when its permits split (the nodes had permits free), and
// takes the lock once the nodes agree...
TEST_F(QuorumWait, ARunThatDoesNotWaitTriesAgainWhenItsPermitsSplit) {
    make_nodes(3, 2);
    at(0, [](NodeState& s) { s.permit_of[1] = "a"; });
    at(1, [](NodeState& s) { s.permit_of[2] = "b"; });
    at(2, [](NodeState& s) {
        s.permit_of = {{1, "a"}, {2, "b"}};
        // Node 2's holders leave right after the first attempt there.
        s.after_acquire = [](NodeState& n) {
            n.permit_of.clear();
            n.after_acquire = nullptr;
        };
    });
    auto lock = lock_over_nodes(2);
    QuorumAttempt last;
    WaitResult r = wait_for_lock(*lock, "t", Millis(0), 2, &last);
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(last.permit, 1);
    EXPECT_EQ(at(2, [](NodeState& s) { return s.wanted.size(); }), 2u);
}

// ... but only split_attempts times: nodes that keep disagreeing are a busy lock to it.
TEST_F(QuorumWait, ARunThatDoesNotWaitStopsTryingAfterAFewSplits) {
    make_nodes(3, 2);
    at(0, [](NodeState& s) { s.permit_of[1] = "a"; });
    at(1, [](NodeState& s) { s.permit_of[2] = "b"; });
    at(2, [](NodeState& s) { s.permit_of = {{1, "a"}, {2, "b"}}; });
    auto lock = lock_over_nodes(2);
    QuorumAttempt last;
    WaitResult r = wait_for_lock(*lock, "t", Millis(0), 2, &last);
    EXPECT_FALSE(r.last.acquired);
    EXPECT_TRUE(last.split);
    EXPECT_EQ(at(2, [](NodeState& s) { return s.wanted.size(); }),
              static_cast<std::size_t>(split_attempts));
    EXPECT_FALSE(at(0, [](NodeState& s) { return s.holds("t"); }));
}

// Too few nodes answering is an outage, not a busy lock: a run that does not wait says how many
// answered; a refused password on them is not ridden out by a wait, but ends it at once.
TEST_F(QuorumWait, TooFewAnswersAreAnOutageAndARefusalEndsTheWait) {
    make_nodes(3);
    at(0, [](NodeState& s) { s.down = true; });
    at(1, [](NodeState& s) { s.down = true; });
    auto lock = lock_over_nodes();
    try {
        wait_for_lock(*lock, "t", Millis(0));
        ADD_FAILURE() << "no error";
    } catch (const RedisUnavailable& e) {
        EXPECT_NE(std::string(e.what()).find(
                      "cannot take lock 'test:job': only 1 of 3 Redis nodes answered (2 needed"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_FALSE(at(2, [](NodeState& s) { return s.holds("t"); }));

    for (std::size_t i = 0; i < 2; ++i)
        at(i, [](NodeState& s) {
            s.down = false;
            s.refuse = AuthError("WRONGPASS invalid username-password pair");
        });
    try {
        wait_for_lock(*lock, "t", Millis(60'000));
        ADD_FAILURE() << "no error";
    } catch (const RedisUnavailable& e) {
        ADD_FAILURE() << "an outage, not a refusal: " << e.what();
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), exit_code::auth) << e.what();
    }
    // One attempt (the wait did not ride the refusal out), and the wait left node 2's queue.
    EXPECT_EQ(at(2, [](NodeState& s) { return s.wanted.size(); }), 2u);
    EXPECT_FALSE(at(2, [](NodeState& s) { return s.queued("t") || s.holds("t"); }));
}

// ---- The hand-off over a quorum in one round trip (issue 35): QuorumTarget::take_hand_off ----

namespace {

// Waiters that accept a hand-off (as QuorumBackend sets it), behind holder "h" on every node,
// whose record says fence `fence` and whose counter is `counter` per node.
class QuorumHandOff : public QuorumWait {
  protected:
    void hold_everywhere(std::vector<long long> counters, long long fence) {
        make_nodes(counters.size());
        const std::string holder = "h";
        for (std::size_t i = 0; i < counters.size(); ++i) {
            const long long counter = counters[i];
            at(i, [&](NodeState& s) {
                s.holder = holder;
                s.busy_pttl = long_ttl.count();
                s.counter = counter;
                s.fence_of.insert_or_assign(holder, fence);
            });
        }
    }
    // A waiter on a thread of its own, with a QuorumLock of its own; returns when it is queued
    // on every node.
    std::future<WaitResult> start_waiter(const std::string& token, Millis claim = Millis(5'000)) {
        auto lock = std::shared_ptr<QuorumLock>(lock_over_nodes());
        lock->set_hand_off(claim);
        locks.push_back(lock);
        auto run = std::async(std::launch::async, [this, lock, token] {
            QuorumAttempt last;
            WaitResult r = wait_for_lock(*lock, token, Millis(60'000), 1, &last);
            std::lock_guard g(fences_mutex);
            fences[token] = last.fence;
            return r;
        });
        for (std::size_t i = 0; i < nodes.size(); ++i)
            EXPECT_TRUE(
                eventually([&] { return at(i, [&](NodeState& s) { return s.queued(token); }); }));
        return run;
    }
    // The holder's release script on node i (FakeNode::release: a hand-off to an asking head).
    void release_on(std::size_t i, const std::string& token = "h") {
        FakeNode(nodes[i], "node" + std::to_string(i), false).release(keys, token, Millis(0));
    }
    long long fence_of(const std::string& token) {
        std::lock_guard g(fences_mutex);
        return fences[token];
    }
    std::size_t attempts_on(std::size_t i) {
        return at(i, [](NodeState& s) { return s.wanted.size(); });
    }

    std::vector<std::shared_ptr<QuorumLock>> locks;
    std::mutex fences_mutex;
    std::map<std::string, long long> fences;
};

}  // namespace

// Every node's release hands the waiter the lock with the same fence (the holder had raised its
// fence, 10, everywhere): the waiter starts on the wake-ups, with no acquire and no fence step
// after them, its lease the claim window.
TEST_F(QuorumHandOff, EqualFencesFromAMajorityStartTheWaiterAtOnce) {
    hold_everywhere({10, 10, 10}, 10);
    auto waiter = start_waiter("w");
    for (std::size_t i = 0; i < 3; ++i) release_on(i);
    WaitResult r = waiter.get();
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(fence_of("w"), 11);
    EXPECT_EQ(r.last.fence, 11);
    EXPECT_EQ(r.lease, Millis(5'000));
    for (std::size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(attempts_on(i), 1u) << i;  // the acquire that queued it, and no other
        EXPECT_EQ(at(i, [](NodeState& s) { return s.raised; }), 0) << i;
        EXPECT_EQ(at(i, [](NodeState& s) { return s.holder; }), "w") << i;
    }
}

// Fences that differ (node 1's counter had moved on) are raised on a majority before the waiter
// starts, to the highest: a later holder's fence, drawn above a counter of that majority, is
// above it. Node 2 is frozen from the release on, and delays nothing.
// On the wall clock: under a sanitizer on a loaded machine (ci43's TSan pass) the hand-offs can
// come too late in the claim window, and the waiter confirms with an attempt, which waits for the
// frozen node; its fence is then above every counter too. What the hand-off must do is checked
// when it was taken, which is every time on an unloaded machine.
TEST_F(QuorumHandOff, UnequalFencesAreRaisedOnAMajorityAndAFrozenNodeDelaysNothing) {
    hold_everywhere({10, 20, 10}, 10);
    auto waiter = start_waiter("w");
    nodes[2]->freeze();
    release_on(0);
    release_on(1);
    WaitResult r = waiter.get();
    ASSERT_TRUE(r.last.acquired);
    EXPECT_GT(r.last.fence, 20);
    if (r.lease == Millis(5'000)) {  // started on the hand-offs
        EXPECT_EQ(r.last.fence, 21);
        for (std::size_t i = 0; i < 2; ++i) {
            EXPECT_EQ(attempts_on(i), 1u) << i;
            EXPECT_GE(at(i, [](NodeState& s) { return s.counter; }), 21) << i;
        }
        EXPECT_EQ(at(0, [](NodeState& s) { return s.raised; }), 1);
    }
    nodes[2]->thaw();
}

// A lying node's hand-off fence, far above the others, is taken only with the fence step: a
// majority then holds it, and the next holder's fence is above it.
TEST_F(QuorumHandOff, AFenceFarAboveTheOthersIsRaisedOnAMajorityBeforeItIsTaken) {
    const long long far = 1'000'000'000'000'000;
    hold_everywhere({10, 10, 10}, 10);
    at(1, [&](NodeState& s) { s.lie_handed = far; });
    auto waiter = start_waiter("w");
    release_on(0);
    release_on(1);
    WaitResult r = waiter.get();
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(r.last.fence, far);
    EXPECT_GE(at(0, [](NodeState& s) { return s.counter; }), far);
    EXPECT_GE(at(1, [](NodeState& s) { return s.counter; }), far);
    locks[0]->release(keys, "w", Millis(0));
    release_on(2);
    at(1, [](NodeState& s) { s.lie_handed.reset(); });
    auto next = lock_over_nodes();
    EXPECT_TRUE(eventually([&] {
        return at(0, [](NodeState& s) { return s.holder.empty(); }) &&
               at(1, [](NodeState& s) { return s.holder.empty(); });
    }));
    QuorumAttempt a = next->acquire(keys, "x", long_ttl, nullptr);
    ASSERT_TRUE(a.acquired);
    EXPECT_GT(a.fence, far);
}

// One node's hand-off (and a stray wake-up from another) is no majority: the waiter does not
// start on it, but confirms with an acquire, which finds the rest still held, and it goes on
// waiting (the node it was handed, it gives back and stays queued on). When the holder's
// release reaches the others, they hand it over, and it starts.
TEST_F(QuorumHandOff, AMinorityOfHandOffsDoesNotStartTheWaiter) {
    hold_everywhere({10, 10, 10}, 10);
    auto waiter = start_waiter("w");
    release_on(0);
    at(1, [](NodeState& s) { s.woken.insert("w"); });
    EXPECT_TRUE(eventually([&] { return attempts_on(1) == 2; }));
    EXPECT_TRUE(eventually([&] { return at(0, [](NodeState& s) { return s.holder.empty(); }); }));
    EXPECT_EQ(waiter.wait_for(milliseconds(0)), std::future_status::timeout);
    EXPECT_EQ(at(1, [](NodeState& s) { return s.holder; }), "h");
    release_on(1);
    release_on(2);
    WaitResult r = waiter.get();
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(r.last.fence, 11);
    EXPECT_EQ(attempts_on(1), 2u);
    EXPECT_EQ(r.lease, Millis(5'000));
}

// A hand-off with less than half the claim window left (here a window too short for any) is not
// started on: an acquire confirms it, which finds the waiter's own token, and its lease is that
// acquire's.
TEST_F(QuorumHandOff, AHandOffTooLateForTheClaimWindowIsConfirmedByAnAcquire) {
    hold_everywhere({10, 10, 10}, 10);
    auto waiter = start_waiter("w", Millis(1));
    for (std::size_t i = 0; i < 3; ++i) release_on(i);
    WaitResult r = waiter.get();
    ASSERT_TRUE(r.last.acquired);
    EXPECT_EQ(r.lease, Millis(0));
    EXPECT_GT(r.last.fence, 11);
    // (Decided by a majority: one node's answer may still be on its way.)
    EXPECT_TRUE(eventually([&] { return attempts_on(0) >= 2; }));
}

// FIFO across the quorum with hand-offs: each release hands the lock to the next waiter by
// ticket on every node, one at a time, with fences that only grow. The first waiter starts on
// the hand-offs alone (equal fences: no fence step); a later one may have been sent an acquire
// by the "look again" wake-up of the hand-off before (lib/take.lua), which then finds the lock
// handed to it on a majority and takes it by that acquire: either way in order.
TEST_F(QuorumHandOff, WaitersAreHandedTheLockInTheOrderTheyCame) {
    hold_everywhere({10, 10, 10}, 10);
    std::mutex check;
    std::vector<std::string> order;
    std::vector<long long> fence_order;
    std::vector<Millis> leases;
    int holding = 0, overlaps = 0;
    std::vector<std::future<void>> runs;
    for (int w = 1; w <= 4; ++w) {
        const std::string token = "w" + std::to_string(w);
        auto lock = std::shared_ptr<QuorumLock>(lock_over_nodes());
        lock->set_hand_off(Millis(5'000));
        runs.push_back(std::async(std::launch::async, [&, lock, token] {
            QuorumAttempt last;
            WaitResult r = wait_for_lock(*lock, token, Millis(60'000), 1, &last);
            if (!r.last.acquired) return;
            {
                std::lock_guard g(check);
                overlaps += holding++ > 0;
                order.push_back(token);
                fence_order.push_back(r.last.fence);
                leases.push_back(r.lease);
            }
            std::this_thread::yield();
            {
                std::lock_guard g(check);
                --holding;
            }
            lock->release(keys, token, Millis(0));
        }));
        for (std::size_t i = 0; i < 3; ++i)
            ASSERT_TRUE(
                eventually([&] { return at(i, [&](NodeState& s) { return s.queued(token); }); }));
    }
    for (std::size_t i = 0; i < 3; ++i) release_on(i);
    for (auto& r : runs) r.get();
    EXPECT_EQ(order, (std::vector<std::string>{"w1", "w2", "w3", "w4"}));
    EXPECT_EQ(overlaps, 0);
    ASSERT_EQ(fence_order.size(), 4u);
    EXPECT_EQ(fence_order[0], 11);
    for (std::size_t k = 1; k < fence_order.size(); ++k)
        EXPECT_GT(fence_order[k], fence_order[k - 1]) << k;
    EXPECT_EQ(leases[0], Millis(5'000));
}

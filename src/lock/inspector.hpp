// What the operator commands (status, list, release, history) ask of "a lock on some Redis",
// the sibling of LockBackend, which is what a run asks. One implementation per topology: one node
// (node_inspector.cpp: plain, TLS, unix, Sentinel and Cluster alike, and plain, permits and
// shared locks) and the quorum (quorum_inspector.cpp: every node at once, a majority decides).
// The reports say what was decided and, where several nodes decide, how each of them answered,
// so that src/inspect/ renders them without asking which topology it has.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lock/ledger/ledger.hpp"
#include "lock/node/lock_state.hpp"
#include "lock/node/permits.hpp"
#include "lock/node/results.hpp"
#include "lock/node/waiters.hpp"
#include "lock/quorum/options.hpp"

namespace redlock {

// Where several nodes decide (a quorum): how many there are, how many a decision needs, and how
// many answered this time. Absent for a single node, which decides alone.
struct Agreement {
    std::size_t nodes = 0;
    std::size_t majority = 0;
    std::size_t answered = 0;
};

// One node's reading of a lock, where several nodes decide.
struct NodeReading {
    std::string endpoint;           // as the node is described ("127.0.0.1:7001")
    std::optional<LockState> lock;  // null when the node did not answer
    std::string error;              // when it did not: why
};

// status NAME.
struct LockReport {
    // The lock as decided: a single node's state; a quorum's leading token as its first node
    // holding it saw it (held only when a majority holds that token), else the lock as free.
    LockState lock;
    bool held = false;
    // A permits lock (--permits N) or a shared lock: its key holds only the record of N or a
    // marker, and the holders are these.
    std::optional<PermitsState> holders;
    LastRuns runs;  // the ledger's last run and last success (none for permits or shared locks)
    // Who waits (--wait), in queue order. A quorum: the queue of the first node that answered
    // (waiters_from names it; each node orders the same waiters by ticket).
    Waiters waiters;
    std::string waiters_from;
    std::optional<Agreement> agreement;
    std::size_t holding = 0;            // with agreement: nodes that hold the leading token
    std::vector<NodeReading> per_node;  // with agreement: every node, in -u order
};

// One line of list.
struct ListedLock {
    LockState lock;
    std::optional<PermitsState> holders;  // as LockReport's
    std::optional<LastRuns> runs;         // when asked for (list --last-runs)
    std::size_t holding = 0;              // with the report's agreement: nodes holding it
};

// list: the locks held, sorted by name. Over a quorum, those one token holds on a majority.
// With --last-runs on one node, also the locks that have a ledger but are free (lock.held()
// false), so that a job that has gone quiet shows.
struct ListReport {
    std::vector<ListedLock> locks;
    std::optional<Agreement> agreement;
};

// What release did to one node, where several nodes decide.
struct NodeReleased {
    std::string endpoint;
    std::optional<ReleaseResult> result;  // null when the node did not answer
    std::string token;                    // --force, when released: the token that held it
    std::string error;                    // when it did not answer: why
    std::vector<PermitHolder> removed;    // --force on a permits lock: the holders removed here
};

// release --token T or --force.
struct ReleaseReport {
    // What the lock was found to be: a permits lock (N > 0), a shared lock, or a plain one.
    int permits = 0;
    bool shared = false;
    // As decided: released, absent (nothing held it, or no longer), or not_owner (--token T while
    // another token holds it). A quorum: released when some node released it, else not_owner
    // when some node holds another token; per_node says which.
    ReleaseResult result = ReleaseResult::absent;
    // A plain lock: with --force and released, the state it had; with not_owner, its holder now
    // (read after the refusal, so only informative).
    LockState lock;
    // A permits or shared lock: with --force, the holders removed; with not_owner, the holders
    // now (read after the refusal).
    std::vector<PermitHolder> removed;
    std::optional<PermitsState> holders_now;
    std::optional<Agreement> agreement;
    std::vector<NodeReleased> per_node;  // with agreement: every node, in -u order
};

class LockInspector {
  public:
    virtual ~LockInspector() = default;

    // The lock's state, its holders and its last runs. Throws RedisUnavailable when too few
    // nodes answered to tell whether it is held.
    virtual LockReport status(const LockKeys& keys) = 0;
    // The locks held under `prefix` whose names match the glob `pattern`; with `last_runs`,
    // each one's last runs too (one more round trip per lock).
    virtual ListReport list(const std::string& prefix, const std::string& pattern,
                            bool last_runs) = 0;
    // list --names: the names of the locks ever taken (lock_scan.hpp), at most `max`. A quorum
    // refuses (UsageError): the completions that ask pass only the first -u.
    virtual std::vector<std::string> names(const std::string& prefix, const std::string& pattern,
                                           std::size_t max) = 0;
    // release --token T: compare-and-delete through the script a run uses, so waiters are woken.
    virtual ReleaseReport release_token(const LockKeys& keys, const std::string& token) = 0;
    // release --force: deletes whatever holds the lock, for a holder that is gone and whose
    // token nobody has; its waiters are woken.
    virtual ReleaseReport force_release(const LockKeys& keys) = 0;
    // The newest `limit` entries of the lock's ledger, newest first. A quorum's nodes each hold
    // a copy: the entries of every node that answered are merged, each run once.
    virtual std::vector<LedgerEntry> history(const LockKeys& keys, std::size_t limit) = 0;
};

// Whether `lock` (as read on one node) is a held permits or shared lock: its key then holds
// only the record of N or a marker, and its holders are listed apart.
bool has_holders(const LockState& lock);

// A permits lock's or a shared lock's holders on one node, when has_holders(lock). Both
// inspectors read them so.
std::optional<PermitsState> holders_of(Connection& conn, const LockState& lock);

// The inspector for `conn`'s topology: a quorum when it names several nodes, else one node, as
// make_backend decides.
std::unique_ptr<LockInspector> make_inspector(const ConnectionOptions& conn);
std::unique_ptr<LockInspector> make_node_inspector(const ConnectionOptions& conn);
std::unique_ptr<LockInspector> make_quorum_inspector(const ConnectionOptions& conn);

}  // namespace redlock

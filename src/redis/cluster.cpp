#include "redis/cluster.hpp"

#include <fmt/format.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <thread>
#include <unordered_map>

#include "redis/cluster_slots.hpp"
#include "redis/socket.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"
#include "util/printable.hpp"

namespace redlock {
namespace {

// Calls fn(0) .. fn(n - 1) at once, each but the first on a thread of its own, and waits for all:
// masters far away cost one round trip together, not one each. An exception is rethrown once all
// have ended, the first by index, as a loop would have met it.
void on_each(std::size_t n, const std::function<void(std::size_t)>& fn) {
    std::vector<std::exception_ptr> errors(n);
    auto guarded = [&](std::size_t i) {
        try {
            fn(i);
        } catch (...) {
            errors[i] = std::current_exception();
        }
    };
    {
        std::vector<std::jthread> threads;
        threads.reserve(n);
        // Started with every signal blocked (threads inherit the mask), as the quorum's workers
        // are: a signal meant for the run's signalfd must never be taken by one of them.
        sigset_t all, before;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &before);
        try {
            for (std::size_t i = 1; i < n; ++i) threads.emplace_back(guarded, i);
        } catch (...) {
            pthread_sigmask(SIG_SETMASK, &before, nullptr);
            throw;
        }
        pthread_sigmask(SIG_SETMASK, &before, nullptr);
        if (n > 0) guarded(0);
    }
    for (const std::exception_ptr& e : errors)
        if (e) std::rethrow_exception(e);
}

}  // namespace

ClusterRouter::ClusterRouter(const Endpoint& cluster, Timeouts timeouts, const int& cancel_fd)
    : cluster_(cluster), timeouts_(timeouts), cancel_fd_(cancel_fd) {
    owner_.fill(no_owner);
}

ClusterRouter::~ClusterRouter() = default;

void ClusterRouter::set_home_key(std::string_view key) {
    home_slot_ = hash_slot(key);
    home_key_ = std::string(key);
    home_reported_ = false;
}

Connection& ClusterRouter::node(const NodeAddress& address) {
    auto& slot = nodes_[address.describe()];
    if (!slot) {
        // Every node takes the cluster URL's credentials (and whatever else the URL set); only
        // where to connect differs.
        Endpoint ep = cluster_;
        ep.cluster_seeds.clear();
        ep.host = address.host;
        ep.port = address.port;
        ep.socket_path.clear();
        ep.db = 0;
        slot = std::make_unique<Connection>(std::move(ep), timeouts_);
    }
    slot->set_cancel_fd(cancel_fd_);
    return *slot;
}

void ClusterRouter::learn(unsigned slot, const NodeAddress& master) {
    auto it = std::find(masters_.begin(), masters_.end(), master);
    if (it == masters_.end()) it = masters_.insert(masters_.end(), master);
    owner_[slot] = static_cast<std::uint16_t>(it - masters_.begin());
}

void ClusterRouter::refresh(Deadline deadline) {
    std::vector<NodeAddress> candidates = masters_;
    for (const Endpoint& seed : cluster_.cluster_seeds) {
        NodeAddress address{seed.host, seed.port};
        if (std::find(candidates.begin(), candidates.end(), address) == candidates.end())
            candidates.push_back(address);
    }
    std::string failures;
    // The first node that refused us (NOAUTH, not a cluster node, a reply we cannot use). The
    // others are still asked: a known master's or a seed's address may now be served by some
    // other server (a container's reused IP; a port that a killed master freed and another
    // server took, as cluster_failover.bats saw in ciAH, where the run ended with 77 although
    // two masters would have answered). Only when none gives the map is the refusal the
    // answer, with its own exit code: a cluster that wants a password we lack is still 77.
    std::exception_ptr refusal;
    for (const NodeAddress& address : candidates) {
        if (BootClock::now() >= deadline) break;
        Connection& conn = node(address);
        try {
            // On a new connection it rides in the log-in's write (AUTH): a read, harmless even
            // where that AUTH fails, and the map then costs no round trip of its own.
            adopt(conn.read_only_command({"CLUSTER", "SLOTS"}, deadline), address);
            return;
        } catch (const RedisUnavailable& e) {
            // A seed or master that is down (or serves no slots): the next one may know the map.
            failures += fmt::format("{}{}", failures.empty() ? "" : "; ", e.what());
            continue;
        } catch (const Error& e) {
            log::verbose("{} refused the slot map request: {}", address.describe(), e.what());
            if (!refusal) refusal = std::current_exception();
            continue;
        }
    }
    if (refusal) std::rethrow_exception(refusal);
    throw RedisUnavailable(fmt::format("no Redis Cluster node answered CLUSTER SLOTS ({})",
                                       failures.empty() ? "out of time" : failures));
}

void ClusterRouter::adopt(const Reply& reply, const NodeAddress& address) {
    std::string_view error = error_text(*reply);
    if (error.find("cluster support disabled") != std::string_view::npos)
        throw UsageError(fmt::format(
            "Redis at {} is not a Redis Cluster node ({}); use redis:// for a single server",
            address.describe(), error));
    std::vector<SlotRange> ranges =
        parse_cluster_slots(check(reply, "reading the Redis Cluster slot map").raw(), address.host);
    if (ranges.empty())
        throw RedisUnavailable(fmt::format("{} serves no slots", address.describe()));
    masters_.clear();
    owner_.fill(no_owner);
    // One index per master, found by hashing: a linear search per range made a reply of
    // many ranges quadratic. parse_cluster_slots allows at most 16384 ranges, so every index
    // fits the 16-bit table.
    std::unordered_map<std::string, std::uint16_t> index;
    for (const SlotRange& range : ranges) {
        auto [it, fresh] =
            index.try_emplace(range.master.describe(), static_cast<std::uint16_t>(masters_.size()));
        if (fresh) masters_.push_back(range.master);
        std::fill(owner_.begin() + range.first, owner_.begin() + range.last + 1, it->second);
    }
    stale_ = false;
    log::verbose("read the Redis Cluster slot map from {}: {} masters", address.describe(),
                 masters_.size());
}

NodeAddress ClusterRouter::owner(unsigned slot, Deadline deadline) {
    if (stale_ || owner_[slot] == no_owner) {
        try {
            refresh(deadline);
        } catch (const RedisUnavailable& e) {
            // What we knew may still be right (only the node we asked is down); the command
            // itself will tell.
            if (owner_[slot] == no_owner) throw;
            log::verbose("keeping the old slot map: {}", e.what());
        }
    }
    if (owner_[slot] == no_owner)
        throw RedisUnavailable(
            fmt::format("no Redis Cluster master serves slot {} (CLUSTERDOWN?)", slot));
    return masters_[owner_[slot]];
}

NodeAddress ClusterRouter::any_master(Deadline deadline) {
    if (home_slot_) return owner(*home_slot_, deadline);
    if (stale_ || masters_.empty()) refresh(deadline);
    return masters_.front();
}

// Named once a node has answered a command on the lock key's slot without a redirect: that node
// holds the lock, not the seed or the owner an old map named.
void ClusterRouter::report_home(unsigned slot, const NodeAddress& served_by, bool asked) {
    if (slot != home_slot_ || home_reported_) return;
    home_reported_ = true;
    log::verbose("Redis Cluster: lock key '{}' is in slot {}, served by {}{}", printable(home_key_),
                 slot, served_by.describe(), asked ? " (migrating there)" : "");
}

void ClusterRouter::pause_for(Millis pause) const {
    pollfd p{cancel_fd_, POLLIN, 0};
    Deadline until = BootClock::now() + pause;
    while (BootClock::now() < until) {
        int n = ::poll(&p, cancel_fd_ >= 0 ? 1 : 0, millis_until(until));
        if (n > 0) throw Cancelled();
        if (n < 0 && errno != EINTR) return;
    }
}

Reply ClusterRouter::send_asking(Connection& node, const std::vector<std::string>& argv,
                                 Deadline deadline) {
    // ASKING holds for the next command on the connection only, so both go in one write.
    std::vector<Reply> replies = node.pipeline({{"ASKING"}, argv}, deadline);
    check(replies[0], "sending ASKING for a migrating slot");
    return std::move(replies[1]);
}

Reply ClusterRouter::command(const std::vector<std::string>& argv, Deadline deadline) {
    auto key = routing_key(argv);
    std::optional<unsigned> slot;
    if (key) slot = hash_slot(*key);
    std::optional<NodeAddress> ask;
    Millis pause(10);
    for (int redirects = 0;;) {
        NodeAddress target = pinned_ ? *pinned_
                             : ask   ? *ask
                             : slot  ? owner(*slot, deadline)
                                     : any_master(deadline);
        Connection& conn = node(target);
        Reply reply;
        try {
            reply = ask ? send_asking(conn, argv, deadline) : conn.command(argv, deadline);
        } catch (const RedisUnavailable&) {
            // The node may be down for good (failed over): ask the others for the map next time.
            stale_ = true;
            throw;
        }
        bool asked = ask.has_value();
        ask.reset();
        std::string_view error = error_text(*reply);
        if (auto redirect = parse_redirect(error)) {
            // A redirect names where one slot lives: for any slot but the key's it proves
            // nothing about this command, and following it would send the lock (and AUTH) to
            // whatever node the reply names.
            if (!slot || redirect->slot != *slot)
                throw RedisUnavailable(fmt::format(
                    "Redis Cluster node {} redirected {} for slot {}, but {}; not following it",
                    target.describe(), argv[0], redirect->slot,
                    slot ? fmt::format("its key is in slot {}", *slot)
                         : std::string("it has no key")));
            if (++redirects > max_cluster_redirects)
                throw RedisUnavailable(
                    fmt::format("Redis Cluster redirected {} more than {} times; last: {}", argv[0],
                                max_cluster_redirects, error));
            if (redirect->to.host.empty()) redirect->to.host = target.host;
            if (redirect->kind == Redirect::Kind::ask) {
                log::verbose("Redis Cluster: slot {} is migrating; asking {} (ASK)", redirect->slot,
                             redirect->to.describe());
                ask = redirect->to;
                continue;
            }
            log::verbose("Redis Cluster: slot {} moved to {} (MOVED); reading the slot map",
                         redirect->slot, redirect->to.describe());
            try {
                refresh(deadline);
            } catch (const RedisUnavailable& e) {
                log::verbose("could not read the slot map: {}", e.what());
            }
            // The MOVED came from the slot's last owner: it outranks a map read from a node
            // that has not heard of the move yet.
            learn(redirect->slot, redirect->to);
            continue;
        }
        if (error.starts_with("TRYAGAIN") && BootClock::now() + pause < deadline) {
            // A multi-key script on a slot being migrated whose keys are split between the two
            // nodes: the migration moves the rest within moments.
            log::verbose("Redis Cluster: {}; retrying in {}ms", error, pause.count());
            pause_for(pause);
            pause = std::min(pause * 2, Millis(200));
            // Each round trip goes source -> ASK -> target -> TRYAGAIN: bounded by the deadline,
            // not by the redirect limit, which would misname the cause.
            redirects = 0;
            continue;
        }
        if (error.starts_with("CLUSTERDOWN")) stale_ = true;
        if (slot && error.empty()) report_home(*slot, target, asked);
        return reply;
    }
}

// A run's first command on a router without a slot map goes to the first seed, with CLUSTER
// SLOTS behind it in the same write: when the seed serves the lock's slot (a one-master cluster,
// or the seed named for it), map and acquire cost one round trip. Otherwise the command was
// redirected (MOVED, ASK, TRYAGAIN: not run) and goes where the map just read says, as
// command() sends it. Reading the map first was what kept an acquire away from a seed address
// that a server outside the cluster has taken (a reused port or IP): now the acquire runs there
// before the map's refusal is read. So on such a server (CLUSTER SLOTS refused, or no slots
// served) whatever it took is given back at once, on that connection and pinned there, by the
// caller's `give_back` (a compare-and-delete by the run's own token, as after a failed set-up:
// Connection::give_back_first); then the seeds are asked as ever. Meanwhile that server's own
// users may have found the name busy for a round trip, and its fence counter went up by one:
// never two holders, never a fence that repeats.
Reply ClusterRouter::first_command(const std::vector<std::string>& argv, Deadline deadline,
                                   const SetupGiveBack& give_back) {
    auto key = routing_key(argv);
    if (!stale_ || !key || cluster_.cluster_seeds.empty()) return command(argv, deadline);
    const NodeAddress seed{cluster_.cluster_seeds.front().host,
                           cluster_.cluster_seeds.front().port};
    Connection& conn = node(seed);
    if (conn.connected()) return command(argv, deadline);
    std::vector<Reply> replies;
    try {
        replies = conn.first_command(argv, {{"CLUSTER", "SLOTS"}}, deadline, give_back);
    } catch (const ReplyLost& e) {
        // It may have run there, or not (a server that wants a password we lack closes the
        // connection of an unauthenticated client whose command has this many arguments): sent
        // again with the same token where the map says, which re-answers an acquire that took
        // the lock there; on a server outside the cluster, what it took expires by its TTL.
        stale_ = true;
        log::verbose("Redis Cluster seed {}: {}; reading the slot map elsewhere", seed.describe(),
                     e.what());
        return command(argv, deadline);
    } catch (const Error& e) {
        // Not reached, or refused in the set-up (given back already): the seeds, as ever.
        log::verbose("Redis Cluster seed {}: {}; reading the slot map elsewhere", seed.describe(),
                     e.what());
        return command(argv, deadline);
    }
    try {
        adopt(replies[1], seed);
    } catch (const Error& e) {
        log::verbose(
            "Redis Cluster seed {} gave no slot map ({}); giving back what the command "
            "sent with it did there",
            seed.describe(), e.what());
        {
            pinned_ = seed;
            struct Unpin {
                std::optional<NodeAddress>& pinned;
                ~Unpin() { pinned.reset(); }
            } unpin{pinned_};
            try {
                give_back(replies[0]);
            } catch (const Error& undo) {
                log::verbose("could not undo on {} the command sent with CLUSTER SLOTS: {}",
                             seed.describe(), undo.what());
            }
        }
        stale_ = true;
        return command(argv, deadline);
    }
    std::string_view error = error_text(*replies[0]);
    if (parse_redirect(error) || error.starts_with("TRYAGAIN")) return command(argv, deadline);
    if (error.empty()) report_home(hash_slot(*key), seed, false);
    return std::move(replies[0]);
}

std::vector<Reply> ClusterRouter::pipeline(const std::vector<std::vector<std::string>>& commands,
                                           Deadline deadline, bool read_only) {
    std::map<std::string, std::pair<NodeAddress, std::vector<std::size_t>>> by_node;
    for (std::size_t i = 0; i < commands.size(); ++i) {
        auto key = routing_key(commands[i]);
        NodeAddress target = key ? owner(hash_slot(*key), deadline) : any_master(deadline);
        auto& group = by_node[target.describe()];
        group.first = target;
        group.second.push_back(i);
    }
    // Each master's pipeline on its own connection, all at once (on_each). The connections are
    // made here, on this thread: nodes_ is not for the threads to change.
    std::vector<std::pair<Connection*, const std::vector<std::size_t>*>> groups;
    for (auto& [name, group] : by_node) groups.emplace_back(&node(group.first), &group.second);
    std::vector<Reply> replies(commands.size());
    try {
        on_each(groups.size(), [&](std::size_t g) {
            auto [conn, indexes] = groups[g];
            std::vector<std::vector<std::string>> batch;
            for (std::size_t i : *indexes) batch.push_back(commands[i]);
            std::vector<Reply> got = read_only ? conn->read_only_pipeline(batch, deadline)
                                               : conn->pipeline(batch, deadline);
            for (std::size_t j = 0; j < got.size(); ++j) replies[(*indexes)[j]] = std::move(got[j]);
        });
    } catch (const RedisUnavailable&) {
        stale_ = true;
        throw;
    }
    for (std::size_t i = 0; i < commands.size(); ++i) {
        std::string_view error = error_text(*replies[i]);
        if (parse_redirect(error) || error.starts_with("TRYAGAIN"))
            replies[i] = command(commands[i], deadline);
    }
    return replies;
}

void ClusterRouter::ensure_connected(std::optional<Deadline> cap) {
    Deadline deadline = BootClock::now() + timeouts_.connect;
    if (cap) deadline = std::min(deadline, *cap);
    try {
        node(any_master(deadline)).ensure_connected(deadline);
    } catch (const RedisUnavailable&) {
        stale_ = true;
        throw;
    }
}

void ClusterRouter::close() {
    for (auto& [name, conn] : nodes_) conn->close();
}

bool ClusterRouter::connected() const {
    return std::any_of(nodes_.begin(), nodes_.end(),
                       [](const auto& entry) { return entry.second->connected(); });
}

void ClusterRouter::for_each_master(
    const std::function<void(Connection&, const NodeAddress&)>& visit) {
    refresh(BootClock::now() + timeouts_.connect + timeouts_.command);
    const std::vector<NodeAddress> masters = masters_;
    std::vector<Connection*> conns;
    for (const NodeAddress& master : masters) conns.push_back(&node(master));
    try {
        on_each(masters.size(), [&](std::size_t i) { visit(*conns[i], masters[i]); });
    } catch (const RedisUnavailable&) {
        stale_ = true;
        throw;
    }
}

}  // namespace redlock

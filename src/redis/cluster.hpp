// Redis Cluster routing behind one Connection: the slot map, a connection per master, and the
// MOVED / ASK / TRYAGAIN handling, so the lock code above never knows it talks to a cluster.
// Every key a lock touches shares the lock key's slot (keys.hpp), so a lock lives on one master
// at a time and each command goes to the master that owns that slot now.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/cluster_slots.hpp"
#include "redis/connection.hpp"

namespace redlock {

// A command bounced more often than this is reported instead of chased: the slot map is changing
// faster than we can follow (or the nodes disagree), and the caller's retry logic decides.
inline constexpr int max_cluster_redirects = 5;

class ClusterRouter {
  public:
    // `cancel_fd` is the owning Connection's cancel descriptor, read at each use so that the
    // renewer's stop signal reaches whichever node a command is waiting on.
    ClusterRouter(const Endpoint& cluster, Timeouts timeouts, const int& cancel_fd);
    ~ClusterRouter();
    ClusterRouter(const ClusterRouter&) = delete;
    ClusterRouter& operator=(const ClusterRouter&) = delete;

    // The key whose slot this connection mostly serves (the lock key): ensure_connected() and
    // keyless commands go to that slot's master.
    void set_home_key(std::string_view key);

    // As Connection::command: sends `argv` to the master of its key's slot, following MOVED
    // (slot map refreshed, command resent) and ASK (ASKING + command to the named node, map
    // unchanged), and retrying TRYAGAIN until `deadline`; at most max_cluster_redirects
    // redirections. Other error replies are returned.
    Reply command(const std::vector<std::string>& argv, Deadline deadline);
    // Connection::first_command over the cluster (a run's acquire): on a router that has no slot
    // map yet, the command goes to the first seed in one write with CLUSTER SLOTS (and the
    // set-up), so that a lock whose slot the seed serves costs no round trip for the map.
    // cluster.cpp says why that is safe on a seed that is not a cluster node.
    Reply first_command(const std::vector<std::string>& argv, Deadline deadline,
                        const SetupGiveBack& give_back);
    // One pipeline per master, all at once (a thread per master); a reply that redirects is redone
    // alone with command(). `read_only`: commands that change nothing, which may ride in a new
    // connection's set-up write (Connection::read_only_pipeline).
    std::vector<Reply> pipeline(const std::vector<std::vector<std::string>>& commands,
                                Deadline deadline, bool read_only = false);
    void ensure_connected(std::optional<Deadline> cap);
    void close();
    bool connected() const;

    // Calls `visit` with a connection to each master of a freshly read slot map: for commands
    // that must see the whole keyspace, such as SCAN. The masters are visited at once, each on
    // a thread of its own, so `visit` must guard what it shares with the other calls.
    void for_each_master(const std::function<void(Connection&, const NodeAddress&)>& visit);

  private:
    static constexpr std::uint16_t no_owner = 0xFFFF;

    Connection& node(const NodeAddress& address);
    // The master of `slot`, reading the slot map first when it is stale or lacks the slot.
    NodeAddress owner(unsigned slot, Deadline deadline);
    NodeAddress any_master(Deadline deadline);
    // Reads CLUSTER SLOTS from the first node that answers: known masters, then the seeds.
    void refresh(Deadline deadline);
    // Takes `reply` (CLUSTER SLOTS from `address`) as the slot map; throws what refresh()
    // counts as that node's refusal, or RedisUnavailable when it serves no slots.
    void adopt(const Reply& reply, const NodeAddress& address);
    void learn(unsigned slot, const NodeAddress& master);
    Reply send_asking(Connection& node, const std::vector<std::string>& argv, Deadline deadline);
    // -v names the lock's slot and the node that serves it, once.
    void report_home(unsigned slot, const NodeAddress& served_by, bool asked);
    // Waits `pause` unless cancelled (throws Cancelled).
    void pause_for(Millis pause) const;

    Endpoint cluster_;
    Timeouts timeouts_;
    const int& cancel_fd_;
    std::vector<NodeAddress> masters_;
    std::array<std::uint16_t, cluster_slots> owner_;  // index into masters_, or no_owner
    bool stale_ = true;                               // read the slot map before trusting it
    std::optional<unsigned> home_slot_;
    std::string home_key_;
    bool home_reported_ = false;  // -v names the lock's slot and master once
    // While set, every command goes to this node whatever the map says: a give-back on the seed
    // that ran a first command (first_command).
    std::optional<NodeAddress> pinned_;
    std::map<std::string, std::unique_ptr<Connection>> nodes_;  // by NodeAddress::describe()
};

}  // namespace redlock

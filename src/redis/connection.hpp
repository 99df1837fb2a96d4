// One connection to one Redis node: RESP encoding and decoding by hiredis, I/O by our Socket so
// every command has a deadline. Its replies are Reply objects (reply.hpp, which also maps Redis
// error replies to the program's exceptions): hiredis itself is not visible from here up.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/redis_url.hpp"
#include "redis/reply.hpp"
#include "redis/script_memory.hpp"
#include "redis/socket.hpp"
#include "util/clock.hpp"

struct redisReader;  // hiredis

namespace redlock {

class ClusterRouter;  // cluster.hpp: what a redis-cluster:// Connection delegates to

// Undoes a command that went out in a set-up's write that then failed (Connection::
// first_command): called with that command's reply while the connection is still open, so that
// what it sends runs after it, in the same database, on the same server, as the same user.
using SetupGiveBack = std::function<void(const Reply& first_reply)>;

struct Timeouts {
    Millis connect{2000};
    Millis command{2000};
};

class Connection {
  public:
    // A redis-cluster:// endpoint makes this a Redis Cluster client (cluster.hpp): every command
    // goes to the master of its key's slot, following redirections.
    Connection(Endpoint endpoint, Timeouts timeouts);
    ~Connection();
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;

    // While set, a readable `fd` aborts any wait with Cancelled (the renewer's stop signal).
    void set_cancel_fd(int fd) { cancel_fd_ = fd; }

    // Sends one command and returns its reply, connecting (and logging in) first when needed.
    // Error replies are returned, not thrown; use check() to map them. On any I/O failure the
    // connection is closed so the next call starts fresh.
    Reply command(const std::vector<std::string>& argv);
    Reply command(const std::vector<std::string>& argv, Deadline deadline);
    // As command(), for a command that changes nothing (CLUSTER SLOTS): on a connection that
    // is not open yet it goes out in the set-up's write (AUTH, SELECT), so that it costs no
    // round trip of its own. Only for such commands: Redis runs a pipelined command even when
    // the AUTH before it failed, as the default user.
    Reply read_only_command(const std::vector<std::string>& argv, Deadline deadline);
    // As pipeline(), for commands that change nothing (status's reads), with the same rule as
    // read_only_command: on a connection that is not open yet they go out in the set-up's write,
    // so that set-up and reads cost one round trip in all. The time the connect takes does not
    // count against `deadline`. Over Redis Cluster, one such pipeline per master.
    std::vector<Reply> read_only_pipeline(const std::vector<std::vector<std::string>>& commands,
                                          Deadline deadline);
    // As command(), for a run's first command, which may change something (the acquire): on a
    // connection that is not open yet it goes out in the set-up's write, so that set-up and
    // acquire cost one round trip. Redis runs it even when the AUTH or SELECT before it failed,
    // and a sentinel's master that turns out to be a writable replica runs it too; so when the
    // set-up fails, `give_back` gets its reply on the still-open connection before the set-up's
    // failure is thrown as ever (connection.cpp says why that is safe). An I/O failure after the
    // write is a ReplyLost: the command may have run.
    // Over Redis Cluster, ClusterRouter::first_command.
    Reply first_command(const std::vector<std::string>& argv, Deadline deadline,
                        const SetupGiveBack& give_back);
    // The same with `then`, commands that change nothing, in the same write after it; the
    // replies in order, `argv`'s first. Not over Redis Cluster.
    std::vector<Reply> first_command(const std::vector<std::string>& argv,
                                     const std::vector<std::vector<std::string>>& then,
                                     Deadline deadline, const SetupGiveBack& give_back);
    // Sends all `commands` at once, then reads their replies in order: one round trip for many
    // independent commands (list reads every lock this way). Same error handling as command().
    std::vector<Reply> pipeline(const std::vector<std::vector<std::string>>& commands,
                                Deadline deadline);

    // The split-phase form of command() and first_command(), for a caller that waits on many
    // connections at once in one poll() (a quorum's rounds reach every node from one thread).
    // send() puts `argv` on its way and returns without waiting: on a connection not open yet it
    // starts the connect, and the set-up and `argv` then go out in one write, with `give_back`,
    // as first_command's do (and the connect, bounded by --connect-timeout, does not count
    // against `deadline`). While a command is in flight, waiting() names what to poll for, and
    // receive() goes on as far as it can without blocking: the reply once it is whole. It throws
    // what command() or first_command() would, after closing the connection where they would,
    // and the timeout once the deadline has passed. finish() is receive() that blocks (a caller
    // that stops polling hands the rest to a thread that may); abort() drops the command in
    // flight and the connection with it (a cancel: the command may have run, as after any cut).
    // Only where sends_in_steps(): one server at an IP literal or a unix socket (Sentinel, Cluster
    // and a name lookup take steps of their own, which block).
    struct Waiting {
        int fd = -1;
        short events = 0;
        Deadline until{};
    };
    bool sends_in_steps() const;
    void send(const std::vector<std::string>& argv, Deadline deadline,
              const SetupGiveBack* give_back = nullptr);
    bool in_flight() const { return flight_.has_value(); }
    // Whether the command in flight went out whole, behind a set-up already judged: only its
    // reply is owed.
    bool only_reply_owed() const {
        return flight_ && flight_->stage == Flight::Stage::reading && !flight_->setup;
    }
    Waiting waiting() const;
    std::optional<Reply> receive();
    Reply finish();
    void abort();

    // Connects (and logs in) if needed, within --connect-timeout or by `cap` if that is earlier:
    // a renewal must not spend longer reconnecting than its lease has left.
    void ensure_connected(std::optional<Deadline> cap = std::nullopt);
    void close();
    // Sentinel endpoints only: asks the sentinels where the master is now and, if it moved,
    // closes the connection so that the next command goes to the new one. SENTINEL FAILOVER
    // leaves the old master writable for seconds, so waiting for READONLY is not enough. When no
    // sentinel answers by `cap`, the connection is left as it is.
    void follow_master(Deadline cap);
    bool connected() const;
    const Endpoint& endpoint() const { return endpoint_; }
    const Timeouts& timeouts() const { return timeouts_; }
    // Bounds for later connects and commands: a quorum's give-back runs under wider ones than
    // its votes (quorum.cpp says why). A Cluster endpoint's node connections keep theirs.
    void set_timeouts(Timeouts timeouts) { timeouts_ = timeouts; }

    // Redis Cluster only (no-op otherwise): the key whose slot this connection serves, so that a
    // (re)connect goes straight to that slot's master. The lock layer sets it to the lock key.
    void set_home_key(std::string_view key);
    // The cluster router for a redis-cluster:// endpoint, else nullptr (list uses it to SCAN
    // every master).
    ClusterRouter* cluster() { return cluster_.get(); }

    // Whether this server is taken to lack the script (by SHA1), so that Script::run sends its
    // body at once rather than pay for an EVALSHA that would fail. Script::run reports every
    // answer: set_script_uncached(sha1, true) on a NOSCRIPT, false when the script ran. A
    // NOSCRIPT for the first script of a connection means the server's cache was emptied as a
    // whole (a restart, a failover, SCRIPT FLUSH): every script not run since is then taken as
    // missing too, so a cold run wastes one round trip, not one per script. A NOSCRIPT after
    // others ran marks that script only (a server that never saw it, such as the renew script
    // on one that only ever saw short runs). Kept across reconnects: EVAL is right for any
    // server. A connection cut after a script ran takes every script as missing too (a
    // restart or a failover empties the cache; close() says why). Between runs, the server's
    // ScriptMemory (script_memory.hpp): a script that no run of this user's saw run on this
    // server is taken as missing too, so that a first run sends its body at once.
    bool script_uncached(std::string_view sha1) const;
    void set_script_uncached(std::string_view sha1, bool uncached);

  private:
    Reply roundtrip(const std::vector<std::string>& argv, Deadline deadline);
    Reply read_reply(Deadline deadline);
    // Reads and drops the replies owed to earlier commands that timed out, until only the `mine`
    // just sent are owed; read_owed then reads one of those.
    void drop_late_replies(Deadline deadline, std::size_t mine);
    Reply read_owed(Deadline deadline);
    // A timed-out command's connection: kept (its late reply then read and dropped by the next
    // command) unless a blocking command's or too many replies are owed; see connection.cpp.
    void after_timeout(const std::vector<std::vector<std::string>>& sent);
    using Commands = std::vector<std::vector<std::string>>;
    // ensure_connected() with `first` (read-only commands) in the set-up's write; their replies
    // are left for the caller to read.
    // With `give_back` (first_command), `first` is one command that may change something.
    void connect(std::optional<Deadline> cap, const Commands& first,
                 const SetupGiveBack* give_back = nullptr);
    // Logs in, selects the database and (sentinel endpoints) checks that `target` is the master;
    // `first` goes out in the same write (their replies are not read here unless the set-up
    // failed and `give_back` is given).
    void handshake(const Endpoint& target, Deadline deadline, const Commands& first,
                   const SetupGiveBack* give_back);
    // Throws the set-up's failure, if its replies say it failed (a refused AUTH or SELECT, a
    // server that is not the master).
    void judge_setup(const Endpoint& target, const std::optional<Reply>& auth,
                     const std::optional<Reply>& select, const std::optional<Reply>& role);
    // After a failed set-up: reads the first command's reply and hands it to `give_back`.
    void give_back_first(Deadline deadline, const SetupGiveBack& give_back);
    // Reads the replies to `sent`, which went out in the set-up's write.
    std::vector<Reply> read_replies(const Commands& sent, Deadline deadline);
    // Runs `io`, the exchange of `sent`, and turns its failure into the one the callers see; see
    // connection.cpp.
    template <class Io>
    auto guarded(const Commands& sent, Io io) -> decltype(io());
    // The master was demoted (a failover): dropped, so that the next command asks the sentinels.
    void drop_if_demoted(const Reply& reply);

    // A command sent by send(), not answered yet.
    struct Flight {
        enum class Stage { connecting, writing, reading } stage = Stage::writing;
        std::vector<std::string> argv;
        std::string out;  // the write: the set-up (a new connection) and `argv`
        std::size_t written = 0;
        short want = 0;
        Deadline connect_by{};  // while connecting
        Deadline started{};     // when send() was called: the connect's time is added back
        Deadline deadline{};    // the reply's
        const SetupGiveBack* give_back = nullptr;
        bool setup = false;  // the set-up went out with it: its replies come first
        std::optional<Reply> auth, select;
    };
    std::optional<Reply> receive_step(Flight& f);
    // The next reply if it is whole without waiting (`more` reads, 0 for nothing now), else
    // nullopt; read_reply is it with a blocking read.
    template <class More>
    std::optional<Reply> parse_reply(More more);

    struct ReaderDeleter {
        void operator()(redisReader* r) const noexcept;
    };

    Endpoint endpoint_;
    Timeouts timeouts_;
    int cancel_fd_ = -1;
    std::optional<Socket> socket_;
    std::unique_ptr<redisReader, ReaderDeleter> reader_;
    // Whether this connection has read a reply yet: a first reply that is not RESP means that
    // something else listens on the port (sshd, a web server), which the error then says.
    bool answered_ = false;
    // Replies the server still owes on this socket: commands sent whole and not yet answered,
    // the one being read included.
    std::size_t owed_ = 0;
    std::unique_ptr<ClusterRouter> cluster_;
    std::string master_;  // sentinel endpoints: the address of the master we are connected to
    std::vector<std::string> uncached_scripts_;  // answered NOSCRIPT, not run since
    bool script_ran_ = false;  // a script ran on this connection since it was (re)connected
    bool script_cache_emptied_ = false;     // the first script of a connection met NOSCRIPT
    std::vector<std::string> ran_scripts_;  // since then: scripts that ran
    // Read when a script is first about to go out (a connection that runs none never reads it).
    mutable std::optional<ScriptMemory> memory_;
    ScriptMemory& memory() const;
    std::optional<Flight> flight_;
};

}  // namespace redlock

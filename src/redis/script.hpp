// A Lua script sent by EVALSHA, falling back to EVAL when the server's script cache lacks it
// (after a restart, a failover or SCRIPT FLUSH); or, for the scripts that give a lock back, always
// by EVAL with its body.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "redis/connection.hpp"
#include "util/clock.hpp"

namespace redlock {

// How long a script call may take. A Deadline bounds the whole call (a renewal must not outlive
// its lease): the EVAL after a NOSCRIPT shares it with the EVALSHA. A duration bounds each send
// (--command-timeout: "any single command"): the EVAL gets one of its own, so that a server slow
// enough to spend most of a timeout on the EVALSHA's round trip still gets the script.
class ScriptTime {
  public:
    ScriptTime(Deadline whole) : deadline_(whole) {}  // NOLINT: implicit on purpose
    ScriptTime(Millis per_send)                       // NOLINT: implicit on purpose
        : deadline_(BootClock::now() + per_send), per_send_(per_send) {}

    Deadline first() const { return deadline_; }
    // The deadline of the EVAL that follows a NOSCRIPT answered at `answered`.
    std::optional<Deadline> then(Deadline answered) const {
        if (per_send_) return answered + *per_send_;
        return std::nullopt;
    }

  private:
    Deadline deadline_;
    std::optional<Millis> per_send_;
};

// How a script goes out. A give-back (a release, an abandon) is sent with its body every time:
// EVALSHA costs a second round trip whenever the cache lacks the script, and a server far away
// may answer that NOSCRIPT only after the caller's time is up, so the EVAL never goes out and
// the lock stays for its whole TTL (a quorum acquire that failed did just that). Their bodies are
// small, and a give-back is rare or once per run: bytes, not round trips.
enum class Send { digest_first, body };

class Script {
  public:
    // sha1: the body's SHA1 in hex, as Redis computes it (cmake/embed.cmake does, at build time).
    Script(std::string_view name, std::string_view body, std::string_view sha1,
           Send send = Send::digest_first);

    // Returns the script's reply; error replies are returned for the caller to map. With
    // `give_back` (a run's acquire), on a connection that is not open yet the script goes out in
    // the set-up's write (Connection::first_command, which says when `give_back` is called).
    Reply run(Connection& conn, const std::vector<std::string>& keys,
              const std::vector<std::string>& args, ScriptTime time,
              const SetupGiveBack* give_back = nullptr) const;

    // The EVALSHA that runs it, or with `body` the EVAL.
    std::vector<std::string> argv(const std::vector<std::string>& keys,
                                  const std::vector<std::string>& args, bool body) const;
    // After a reply to argv(): tells `conn` whether the server has the script, and refuses a
    // server too old for it (UnsupportedServer).
    void note_reply(Connection& conn, const Reply& reply, Deadline deadline) const;

    // Whether run() would send the body at once on `conn` (Send::body, or a server taken to
    // lack the script).
    bool sends_body(const Connection& conn) const {
        return send_ == Send::body || conn.script_uncached(sha1_);
    }

    const std::string& name() const { return name_; }
    const std::string& sha1() const { return sha1_; }

    // The script as it goes out in the set-up's write of `conn` (with `give_back`): itself, or
    // on a connection that will SELECT a database first, a variant that selects it again. A
    // SELECT that fails (a database the server does not have) leaves the connection in
    // database 0, where the command behind it in the same write would run: an acquire there
    // took a fence in a database nobody named, and given back, left that counter behind. The
    // variant's own SELECT fails there too, before the script writes anything; where the
    // connection's succeeded, it changes nothing. Made once per script and database.
    const Script& for_setup(const Connection& conn) const;

  private:
    std::string name_;
    std::string body_;
    std::string sha1_;
    Send send_;
    int database_ = 0;  // a for_setup variant's: the database it selects
};

// One call of a script, as data: what a step sends (ScriptSend, Script::run).
struct ScriptCall {
    const Script* script = nullptr;
    std::vector<std::string> keys;
    std::vector<std::string> args;
};

// Script::run in steps (Connection::send): for a caller that waits on many connections at once.
// The EVALSHA (or the body, where run() would send it at once) goes out when built; step() goes
// on without blocking and returns the reply once there is one, sending the body itself after a
// NOSCRIPT (its own `per_send`, as run() gives it); finish() is step() that blocks. Errors as
// Connection::receive and Script::run throw them. `give_back` (a run's acquire on a connection
// not open yet, as in run()) must outlive the send.
class ScriptSend {
  public:
    ScriptSend(Connection& conn, ScriptCall call, Millis per_send,
               const SetupGiveBack* give_back = nullptr);
    Connection::Waiting waiting() const { return conn_.waiting(); }
    // Whether all it sends went out, the body included: only the reply is owed (after an
    // EVALSHA, a NOSCRIPT would still ask for the body).
    bool sent_all() const { return body_ && conn_.only_reply_owed(); }
    std::optional<Reply> step();
    Reply finish();
    void abort() { conn_.abort(); }

  private:
    // The reply judged as run() does: nullopt after a NOSCRIPT, whose EVAL then went out.
    std::optional<Reply> judge(Reply reply);

    Connection& conn_;
    ScriptCall call_;
    Millis per_send_;
    bool body_;  // the body went out (EVAL), else the digest (EVALSHA)
};

// One command of a read-only batch (run_read_only): a script with its keys and arguments, or,
// where `script` is null, the plain command `args`.
struct ReadCall {
    const Script* script = nullptr;
    std::vector<std::string> keys;
    std::vector<std::string> args;
};

// Sends every call in one write (on a new connection, in the set-up's write too:
// Connection::read_only_pipeline), then the scripts the server lacked (NOSCRIPT) with their
// bodies, in one more write. So only calls that change nothing: status's reads. The replies are
// in the order of `calls`; error replies are returned for the caller to map.
std::vector<Reply> run_read_only(Connection& conn, const std::vector<ReadCall>& calls,
                                 Deadline deadline);

}  // namespace redlock

#include "redis/connection.hpp"

#include <hiredis/hiredis.h>

#include <fmt/format.h>
#include <poll.h>

#include <algorithm>

#include "redis/cluster.hpp"
#include "redis/reply_reader.hpp"
#include "redis/sentinel.hpp"
#include "util/errors.hpp"
#include "util/excerpt.hpp"
#include "util/iequals.hpp"
#include "util/log.hpp"
#include "util/printable.hpp"

namespace redlock {

namespace {

// One command in RESP, as hiredis formats it.
std::string format_command(const std::vector<std::string>& argv) {
    std::vector<const char*> ptrs;
    std::vector<size_t> lens;
    ptrs.reserve(argv.size());
    lens.reserve(argv.size());
    for (const auto& a : argv) {
        ptrs.push_back(a.data());
        lens.push_back(a.size());
    }
    char* raw = nullptr;
    int len = redisFormatCommandArgv(&raw, static_cast<int>(argv.size()), ptrs.data(), lens.data());
    if (len < 0) throw std::bad_alloc();
    std::unique_ptr<char, void (*)(char*)> formatted(raw, redisFreeCommand);
    return std::string(raw, static_cast<size_t>(len));
}

// The set-up's write (handshake): AUTH, SELECT and a sentinel master's ROLE, each when needed.
std::string setup_write(const Endpoint& endpoint) {
    std::string setup;
    if (endpoint.password) {
        std::vector<std::string> auth{"AUTH"};
        if (!endpoint.user.empty()) auth.push_back(endpoint.user);
        auth.push_back(*endpoint.password);
        setup += format_command(auth);
    }
    if (endpoint.db != 0) setup += format_command({"SELECT", std::to_string(endpoint.db)});
    if (endpoint.is_sentinel()) setup += format_command({"ROLE"});
    return setup;
}

}  // namespace

Connection::Connection(Endpoint endpoint, Timeouts timeouts)
    : endpoint_(std::move(endpoint)), timeouts_(timeouts) {
    if (endpoint_.is_cluster())
        cluster_ = std::make_unique<ClusterRouter>(endpoint_, timeouts_, cancel_fd_);
}

Connection::~Connection() = default;

void Connection::ReaderDeleter::operator()(redisReader* r) const noexcept {
    redisReaderFree(r);
}

bool Connection::connected() const {
    return cluster_ ? cluster_->connected() : socket_.has_value();
}

void Connection::set_home_key(std::string_view key) {
    if (cluster_) cluster_->set_home_key(key);
}

bool Connection::script_uncached(std::string_view sha1) const {
    auto has = [&](const std::vector<std::string>& list) {
        return std::find(list.begin(), list.end(), sha1) != list.end();
    };
    if (has(uncached_scripts_) || (script_cache_emptied_ && !has(ran_scripts_))) return true;
    // Without a memory (no cache directory of this user's), the digest goes first, as it did.
    return memory().usable() && !memory().knows(sha1);
}

ScriptMemory& Connection::memory() const {
    if (!memory_) memory_ = ScriptMemory::open(endpoint_.describe());
    return *memory_;
}

void Connection::set_script_uncached(std::string_view sha1, bool uncached) {
    std::erase(uncached_scripts_, sha1);
    if (uncached) {
        // A script remembered is missing: the server's cache was emptied since (a restart, a
        // failover), and nothing else remembered of it holds any more either.
        if (memory().knows(sha1)) memory().forget_all();
        uncached_scripts_.emplace_back(sha1);
        if (!script_ran_) {
            // Emptied (again, after a restart, say): what ran before is gone with the rest.
            script_cache_emptied_ = true;
            ran_scripts_.clear();
        }
        return;
    }
    script_ran_ = true;
    memory().learn(sha1);
    if (script_cache_emptied_ &&
        std::find(ran_scripts_.begin(), ran_scripts_.end(), sha1) == ran_scripts_.end())
        ran_scripts_.emplace_back(sha1);
}

void Connection::close() {
    if (cluster_) cluster_->close();
    socket_.reset();
    reader_.reset();
    answered_ = false;
    owed_ = 0;
    // A connection cut after scripts ran on it comes back, as often as not, to a server that
    // restarted or failed over, whose script cache is empty: every script goes with its body
    // until it has run on the new connection, so that the release or give-back that follows
    // does not pay a NOSCRIPT round trip (issue 35). A body costs bytes, not round trips.
    if (script_ran_) {
        script_cache_emptied_ = true;
        ran_scripts_.clear();
    }
    script_ran_ = false;
}

void Connection::ensure_connected(std::optional<Deadline> cap) {
    if (cluster_) return cluster_->ensure_connected(cap);
    if (socket_) return;
    connect(cap, {});
}

void Connection::connect(std::optional<Deadline> cap, const Commands& first,
                         const SetupGiveBack* give_back) {
    Deadline deadline = BootClock::now() + timeouts_.connect;
    if (cap) deadline = std::min(deadline, *cap);
    // A sentinel URL names no server: ask the sentinels on every (re)connect, so that the first
    // command after a failover finds the new master.
    const Endpoint target = endpoint_.is_sentinel()
                                ? resolve_master(endpoint_, timeouts_, deadline, cancel_fd_)
                                : endpoint_;
    socket_ = Socket::connect(target, deadline, cancel_fd_);
    try {
        reader_.reset(new_reply_reader());
    } catch (...) {
        close();
        throw;
    }
    try {
        handshake(target, deadline, first, give_back);
    } catch (...) {
        close();
        throw;
    }
}

// AUTH, SELECT and a sentinel master's ROLE go out in one write: one round trip for the whole
// set-up, not one each (the difference is whole milliseconds when Redis is in another zone).
// Their replies are read in order, so a refused AUTH is reported as before, ahead of what the
// commands after it answered. A run's first lock command (the acquire) goes out in that write too
// (first_command), although Redis runs a pipelined command even when the AUTH before it failed (a
// server that needs no password: an inherited REDISCLI_AUTH) or the SELECT did (a database that
// does not exist), as the default user or in database 0, and a sentinel's "master" that is in
// fact a replica accepting writes (replica-read-only no) runs it before ROLE's answer is read.
// That is safe because of `give_back`, see give_back_first below.
void Connection::handshake(const Endpoint& target, Deadline deadline, const Commands& first,
                           const SetupGiveBack* give_back) {
    std::string setup = setup_write(endpoint_);
    for (const auto& argv : first) setup += format_command(argv);
    if (setup.empty()) return;
    std::optional<Reply> auth, select, role;
    try {
        socket_->write_all(setup, deadline, cancel_fd_);
        if (endpoint_.password) auth = read_reply(deadline);
        if (endpoint_.db != 0) select = read_reply(deadline);
        if (endpoint_.is_sentinel()) role = read_reply(deadline);
    } catch (const RedisUnavailable& e) {
        // The first command may have gone out whole and run: its caller must not take this for
        // "nothing sent" (an acquire then resends with its token, or abandons).
        if (give_back) throw ReplyLost(e.what());
        throw;
    }
    try {
        judge_setup(target, auth, select, role);
    } catch (...) {
        if (give_back) give_back_first(deadline, *give_back);
        throw;
    }
    if (role) master_ = target.describe();
}

// Why a first command that ran behind a failed set-up can be given back, and how. Redis reads a
// connection's commands in order and runs each before it reads the next, so a give-back sent
// now on this connection runs after the first command, as the same user (the default one, when
// the AUTH was refused), in the same database (0, when the SELECT was refused), on the same
// server (the replica that ROLE exposed): exactly where the first command took whatever it took.
// The caller's give-back is a compare-and-delete by the run's own token (abandon), so it can
// never delete what another run holds, and it also takes back a place in a waiters' queue. A
// first command refused because of the set-up (NOAUTH, NOPERM: the AUTH was needed; READONLY: a
// read-only replica) changed nothing, and the caller can skip the give-back. Meanwhile another
// run may have seen the lock busy there, for one round trip: a run that waits longer or tries
// again, never two holders; and a fence raised on a writable replica only makes that replica's
// counter higher, never a repeat. The set-up's failure is then thrown as before: same message,
// same exit code. Only when the first command's reply is lost too (the connection dropped in
// between) is nothing given back: nothing more can be sent there, and the TTL ends it, as for
// any run that dies after its acquire.
void Connection::give_back_first(Deadline deadline, const SetupGiveBack& give_back) {
    std::optional<Reply> first;
    try {
        first = read_reply(deadline);
    } catch (const Error& e) {
        log::verbose("no reply from {} to the command sent with the failed set-up: {}",
                     endpoint_.describe(), e.what());
        return;
    }
    try {
        give_back(*first);
    } catch (const Error& e) {
        log::verbose("could not undo on {} the command sent with the failed set-up: {}",
                     endpoint_.describe(), e.what());
    }
}

void Connection::judge_setup(const Endpoint& target, const std::optional<Reply>& auth,
                             const std::optional<Reply>& select, const std::optional<Reply>& role) {
    if (auth && (*auth)->is_error()) {
        std::string_view text = error_text(**auth);
        // Redis < 6 has no ACL users; say so instead of a confusing syntax error.
        if (text.find("wrong number of arguments") != std::string_view::npos)
            throw AuthError(
                fmt::format("Redis at {} refused AUTH with a user name (Redis 6+ ACLs needed): {}",
                            endpoint_.describe(), text));
        // Several places can supply the password (the URL, a file, two variables, one of them
        // maybe inherited from a redis-cli setup): name the one that was used.
        throw AuthError(fmt::format(
            "Redis at {} refused authentication: {}{}", endpoint_.describe(), text,
            endpoint_.password_source.empty()
                ? ""
                : fmt::format(" (the password came from {})", endpoint_.password_source)));
    }
    if (select) {
        const Reply& r = *select;
        // A database that does not exist is a mistake in the URL, not an outage.
        if (!error_text(*r).empty() && !error_text(*r).starts_with("NOAUTH") &&
            !error_text(*r).starts_with("NOPERM"))
            throw UsageError(fmt::format("Redis at {} cannot select database {}: {}",
                                         endpoint_.describe(), endpoint_.db, error_text(*r)));
        check(r, fmt::format("selecting database {}", endpoint_.db));
    }
    if (role)
        check_role_is_master(
            check(*role, fmt::format("asking {} for its ROLE", target.describe())).raw(), target,
            endpoint_);
}

void Connection::follow_master(Deadline cap) {
    if (!endpoint_.is_sentinel() || !socket_) return;
    try {
        std::string now_at = resolve_master(endpoint_, timeouts_, cap, cancel_fd_).describe();
        if (now_at == master_) return;
        log::verbose("master '{}' moved from {} to {}; reconnecting", endpoint_.master_name,
                     master_, now_at);
        close();
    } catch (const Error& e) {
        log::verbose("could not check where master '{}' is, staying on {}: {}",
                     endpoint_.master_name, master_, e.what());
    }
}

// A failed exchange closes the connection: a timed-out or cancelled command may still be answered
// later, and that late reply must never be read as the answer to the next command; the caller
// sees a ReplyLost (Redis may have run what was sent). A read that timed out is the exception:
// after_timeout may keep the connection, whose late replies drop_late_replies then reads first.
template <class Io>
auto Connection::guarded(const Commands& sent, Io io) -> decltype(io()) {
    try {
        return io();
    } catch (const ReplyTimedOut& e) {
        after_timeout(sent);
        throw ReplyLost(e.what());
    } catch (const ReplyLost&) {
        close();
        throw;
    } catch (const RedisUnavailable& e) {
        close();
        throw ReplyLost(e.what());
    } catch (...) {
        close();
        throw;
    }
}

void Connection::drop_if_demoted(const Reply& reply) {
    if (endpoint_.is_sentinel() && error_text(*reply).starts_with("READONLY")) close();
}

Reply Connection::read_only_command(const std::vector<std::string>& argv, Deadline deadline) {
    if (cluster_ || socket_) return command(argv, deadline);
    // Connected by `deadline` at the latest, as refresh() asks of every node it tries.
    connect(deadline, {argv});
    return std::move(read_replies({argv}, deadline).front());
}

Reply Connection::first_command(const std::vector<std::string>& argv, Deadline deadline,
                                const SetupGiveBack& give_back) {
    if (cluster_) return cluster_->first_command(argv, deadline, give_back);
    if (socket_) return command(argv, deadline);
    return std::move(first_command(argv, {}, deadline, give_back).front());
}

std::vector<Reply> Connection::first_command(const std::vector<std::string>& argv,
                                             const Commands& then, Deadline deadline,
                                             const SetupGiveBack& give_back) {
    Commands sent{argv};
    sent.insert(sent.end(), then.begin(), then.end());
    if (cluster_)
        throw Error("internal error: a set-up write with reads over Redis Cluster",
                    exit_code::internal);
    if (socket_) return pipeline(sent, deadline);
    Deadline start = BootClock::now();
    // `argv` first: a failed set-up's give-back reads its reply next (give_back_first).
    connect(std::nullopt, sent, &give_back);
    // Sent whole with the set-up: from here on, as command() after its write. The time the
    // connect took does not count against `deadline`.
    std::vector<Reply> replies = read_replies(sent, deadline + (BootClock::now() - start));
    drop_if_demoted(replies.front());
    return replies;
}

std::vector<Reply> Connection::read_only_pipeline(const Commands& commands, Deadline deadline) {
    if (cluster_) return cluster_->pipeline(commands, deadline, true);
    if (socket_ || commands.empty()) return pipeline(commands, deadline);
    Deadline start = BootClock::now();
    connect(std::nullopt, commands);
    return read_replies(commands, deadline + (BootClock::now() - start));
}

std::vector<Reply> Connection::read_replies(const Commands& sent, Deadline deadline) {
    owed_ += sent.size();
    return guarded(sent, [&] {
        std::vector<Reply> replies;
        replies.reserve(sent.size());
        for (std::size_t i = 0; i < sent.size(); ++i) replies.push_back(read_owed(deadline));
        return replies;
    });
}

Reply Connection::command(const std::vector<std::string>& argv) {
    return command(argv, BootClock::now() + timeouts_.command);
}

Reply Connection::command(const std::vector<std::string>& argv, Deadline deadline) {
    if (cluster_) return cluster_->command(argv, deadline);
    ensure_connected();
    return guarded({argv}, [&] {
        Reply reply = roundtrip(argv, deadline);
        drop_if_demoted(reply);
        return reply;
    });
}

std::vector<Reply> Connection::pipeline(const std::vector<std::vector<std::string>>& commands,
                                        Deadline deadline) {
    if (cluster_) return cluster_->pipeline(commands, deadline);
    ensure_connected();
    return guarded(commands, [&] {
        std::string out;
        for (const auto& argv : commands) out += format_command(argv);
        socket_->write_all(out, deadline, cancel_fd_);
        owed_ += commands.size();
        drop_late_replies(deadline, commands.size());
        std::vector<Reply> replies;
        replies.reserve(commands.size());
        for (std::size_t i = 0; i < commands.size(); ++i) replies.push_back(read_owed(deadline));
        return replies;
    });
}

Reply Connection::roundtrip(const std::vector<std::string>& argv, Deadline deadline) {
    socket_->write_all(format_command(argv), deadline, cancel_fd_);
    ++owed_;
    drop_late_replies(deadline, 1);
    return read_owed(deadline);
}

void Connection::drop_late_replies(Deadline deadline, std::size_t mine) {
    for (; owed_ > mine; --owed_) read_reply(deadline);
}

Reply Connection::read_owed(Deadline deadline) {
    Reply reply = read_reply(deadline);
    --owed_;
    return reply;
}

namespace {

// Commands that Redis may hold unanswered by design (a block, a WAIT): their late reply would
// hold up every later command on the connection.
bool blocks(const std::vector<std::string>& argv) {
    static constexpr std::string_view blocking[] = {"BLPOP",    "BRPOP",    "BLMOVE", "BLMPOP",
                                                    "BZPOPMIN", "BZPOPMAX", "BZMPOP", "BRPOPLPUSH",
                                                    "WAIT",     "WAITAOF",  "XREAD",  "XREADGROUP"};
    if (argv.empty()) return false;
    return std::any_of(std::begin(blocking), std::end(blocking),
                       [&](std::string_view b) { return iequals(argv.front(), b); });
}

// Kept for one more command only: when that one times out too, the connection may be stalled (a
// middlebox that dropped it without a word), and only a fresh one can get through.
constexpr std::size_t max_owed = 1;

}  // namespace

// A command that timed out may still run: Redis reads the commands of one connection in order
// and runs each as it comes. A command sent next on a NEW connection can overtake it (the old
// connection's bytes held up in a proxy, a retransmission, a scheduler): a quorum's give-back
// then ran before the acquire it was to undo, which took the key after it, and the lock stayed
// on that node for its whole TTL (rtt.bats 1, seen under load). So the connection is kept, and
// what is sent next on it runs after the late command; its late reply is read and dropped before
// the next one's (drop_late_replies), never taken for it. Not after a blocking command, whose reply
// may be held back for its whole block, nor after a second timeout (max_owed): a caller that
// must get through then tries again, on a fresh connection (the give-backs and the give-up do). Nor
// over Sentinel: there a timeout is how a frozen master shows, and the next command must ask the
// sentinels where the master is now (a Sentinel run gives nothing back; its re-sent acquire carries
// its own token).
void Connection::after_timeout(const std::vector<std::vector<std::string>>& sent) {
    if (endpoint_.is_sentinel() || owed_ > max_owed ||
        std::any_of(sent.begin(), sent.end(), blocks))
        close();
}

template <class More>
std::optional<Reply> Connection::parse_reply(More more) {
    char buf[16384];
    // What this reply has taken so far: bytes left over from the last one, then all we feed.
    std::size_t taken = unparsed_bytes(*reader_);
    // The start of what the server sent, quoted when it is not RESP at all.
    std::string head;
    auto protocol_error = [&] {
        std::string hint;
        // Only where the very first byte is no RESP type at all: a malformed but RESP-looking
        // reply is a broken server, not another program on the port.
        static constexpr std::string_view resp_types = "+-:$*%~>#,(=_|!";
        if (!answered_ && !head.empty() &&
            resp_types.find(head.front()) == std::string_view::npos) {
            std::string_view first_line = std::string_view(head).substr(0, head.find("\r\n"));
            hint = fmt::format(" (is this a Redis server? the port answered with '{}')",
                               printable(excerpt(first_line, 60)));
        }
        return RedisUnavailable(fmt::format("protocol error from Redis at {}: {}{}",
                                            endpoint_.describe(), reader_error(*reader_), hint));
    };
    for (;;) {
        void* out = nullptr;
        if (redisReaderGetReply(reader_.get(), &out) != REDIS_OK) throw protocol_error();
        if (out) {
            answered_ = true;
            return Reply(static_cast<redisReply*>(out));
        }
        if (taken > max_reply_bytes)
            throw RedisUnavailable(fmt::format(
                "protocol error from Redis at {}: a reply of more than {} MiB, more than any "
                "reply can have here",
                endpoint_.describe(), max_reply_bytes >> 20));
        std::size_t n = more(buf, sizeof buf);
        if (n == 0) return std::nullopt;
        taken += n;
        if (head.size() < 256) head.append(buf, std::min(n, 256 - head.size()));
        if (feed_reader(*reader_, buf, n) != REDIS_OK) throw protocol_error();
    }
}

Reply Connection::read_reply(Deadline deadline) {
    // read_some returns at least one byte, or throws.
    return std::move(*parse_reply([&](char* buf, std::size_t len) {
        return socket_->read_some(buf, len, deadline, cancel_fd_);
    }));
}

bool Connection::sends_in_steps() const {
    return !cluster_ && !endpoint_.is_sentinel() && Socket::connects_in_steps(endpoint_);
}

void Connection::send(const std::vector<std::string>& argv, Deadline deadline,
                      const SetupGiveBack* give_back) {
    Flight f;
    f.argv = argv;
    f.started = BootClock::now();
    f.deadline = deadline;
    if (!socket_) {
        // connect() and handshake() in steps: the set-up and `argv` in one write.
        socket_ = Socket::begin_connect(endpoint_);
        try {
            reader_.reset(new_reply_reader());
        } catch (...) {
            close();
            throw;
        }
        f.stage = Flight::Stage::connecting;
        f.connect_by = f.started + timeouts_.connect;
        f.setup = true;
        f.give_back = give_back;
        f.out = setup_write(endpoint_);
    }
    f.out += format_command(argv);
    flight_ = std::move(f);
}

Connection::Waiting Connection::waiting() const {
    const Flight& f = *flight_;
    // As connect() and handshake() bound them: the connect, the set-up's write and its replies
    // by the connect's deadline; the command's reply by its own.
    const bool setup_replies =
        f.setup && ((endpoint_.password && !f.auth) || (endpoint_.db != 0 && !f.select));
    const bool by_connect = f.stage == Flight::Stage::connecting ||
                            (f.stage == Flight::Stage::writing && f.setup) || setup_replies;
    return {socket_ ? socket_->fd() : -1, f.want, by_connect ? f.connect_by : f.deadline};
}

std::optional<Reply> Connection::receive() {
    std::optional<Reply> reply;
    try {
        reply = receive_step(*flight_);
    } catch (...) {
        flight_.reset();
        throw;
    }
    if (reply) flight_.reset();
    return reply;
}

// What connect(), handshake() and guarded() do to each failure, stage by stage: a failed connect
// is thrown as it is; a failure after the write may have left the command run (ReplyLost), unless
// it went out behind a set-up without a give-back; a timed-out reply may keep the connection
// (after_timeout).
std::optional<Reply> Connection::receive_step(Flight& f) {
    const Deadline now = BootClock::now();
    if (f.stage == Flight::Stage::connecting) {
        try {
            f.want = socket_->connect_step(f.connect_by);
        } catch (...) {
            close();
            throw;
        }
        if (f.want != 0) return std::nullopt;
        f.stage = Flight::Stage::writing;
        // As in first_command: the time the connect took does not count against the deadline.
        f.deadline += BootClock::now() - f.started;
    }
    auto lost = [&](const RedisUnavailable& e) {
        close();
        if (f.setup && !f.give_back) throw;
        throw ReplyLost(e.what());
    };
    if (f.stage == Flight::Stage::writing) {
        try {
            std::string_view rest = std::string_view(f.out).substr(f.written);
            f.want = socket_->write_step(rest);
            f.written = f.out.size() - rest.size();
            if (f.want != 0 && now >= (f.setup ? f.connect_by : f.deadline))
                throw RedisUnavailable(fmt::format("Redis at {} timed out while sending a command",
                                                   endpoint_.describe()));
        } catch (const RedisUnavailable& e) {
            lost(e);
        } catch (...) {
            close();
            throw;
        }
        if (f.want != 0) return std::nullopt;
        f.stage = Flight::Stage::reading;
        // Sent whole: owed from now on. (Behind a set-up, once the set-up is judged: a failed
        // one's give-back reads it itself.)
        if (!f.setup) ++owed_;
        // Just sent: nothing to read before poll() says so, unless bytes read before (or held
        // decrypted by OpenSSL) are there already.
        if (!socket_->buffers() && unparsed_bytes(*reader_) == 0) {
            f.want = POLLIN;
            return std::nullopt;
        }
    }
    short want = 0;
    auto more = [&](char* buf, std::size_t len) { return socket_->read_step(buf, len, want); };
    // Nothing whole to read yet: wait, unless the deadline has passed.
    auto later = [&](Deadline deadline) -> std::optional<Reply> {
        if (now >= deadline)
            throw ReplyTimedOut(fmt::format("Redis at {} timed out while waiting for a reply",
                                            endpoint_.describe()));
        f.want = want;
        return std::nullopt;
    };
    if (f.setup) {
        try {
            if (endpoint_.password && !f.auth && !(f.auth = parse_reply(more)))
                return later(f.connect_by);
            if (endpoint_.db != 0 && !f.select && !(f.select = parse_reply(more)))
                return later(f.connect_by);
        } catch (const RedisUnavailable& e) {
            lost(e);
        } catch (...) {
            close();
            throw;
        }
        try {
            judge_setup(endpoint_, f.auth, f.select, std::nullopt);
        } catch (...) {
            if (f.give_back) give_back_first(f.deadline, *f.give_back);
            close();
            throw;
        }
        f.setup = false;
        ++owed_;  // from here on, as any command sent whole
    }
    return guarded({f.argv}, [&]() -> std::optional<Reply> {
        // Replies owed to earlier commands that timed out first (drop_late_replies).
        for (; owed_ > 1; --owed_)
            if (!parse_reply(more)) return later(f.deadline);
        std::optional<Reply> reply = parse_reply(more);
        if (!reply) return later(f.deadline);
        --owed_;
        return reply;
    });
}

Reply Connection::finish() {
    for (;;) {
        if (std::optional<Reply> reply = receive()) return std::move(*reply);
        Waiting w = waiting();
        try {
            socket_->ready(w.events, w.until, cancel_fd_);
        } catch (...) {
            abort();
            throw;
        }
    }
}

void Connection::abort() {
    flight_.reset();
    close();
}

}  // namespace redlock

// The shared protocol against one node (LockNode built shared) and the operator's reads of a
// shared lock. Every step is one call of shared.lua, which does it atomically.
#include "lock/shared.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "lock/lock.hpp"
#include "lock/lock_replies.hpp"
#include "lock/scripts.hpp"
#include "util/errors.hpp"

namespace redlock {
namespace {

std::string text(const redisReply& r) {
    return r.str ? std::string(r.str, r.len) : std::string();
}

long long integer_or(const redisReply& r, long long otherwise) {
    return r.type == REDIS_REPLY_INTEGER ? r.integer : otherwise;
}

// Runs one operation of shared.lua; KEYS and the first ARGV are the same for all of them.
Reply run_shared(Connection& conn, const LockKeys& keys, std::string_view op,
                 std::vector<std::string> args, Deadline deadline) {
    std::vector<std::string> argv{std::string(op), shared_record_prefix(keys), keys.wake,
                                  std::to_string(wake_linger.count())};
    argv.insert(argv.end(), std::make_move_iterator(args.begin()),
                std::make_move_iterator(args.end()));
    return scripts::shared().run(conn, {keys.key, keys.fence, keys.wait, shared_holders_key(keys)},
                                 argv, deadline);
}

// {token, pttl, {record...}} as the status and force operations return each holder.
std::vector<PermitHolder> holders_from(const redisReply& r, std::size_t first,
                                       long long redis_now_ms) {
    std::vector<PermitHolder> holders;
    for (std::size_t i = first; i < r.elements; ++i) {
        const redisReply& h = *r.element[i];
        if (h.type != REDIS_REPLY_ARRAY || h.elements < 3 ||
            h.element[0]->type != REDIS_REPLY_STRING)
            throw RedisError("unexpected reply from the shared script (is this Redis?)");
        PermitHolder p;
        p.permit = 0;
        p.token = text(*h.element[0]);
        p.pttl_ms =
            std::clamp<long long>(integer_or(*h.element[1], -2), -2, max_server_ttl.count());
        p.holder = holder_from_reply(*h.element[2], 0);
        if (p.holder && p.holder->token != p.token) p.holder.reset();
        if (p.holder) p.holder->now_ms = redis_now_ms;
        holders.push_back(std::move(p));
    }
    return holders;
}

}  // namespace

std::string shared_holders_key(const LockKeys& keys) {
    return companion_key(keys.key, "shared");
}

std::string shared_record_prefix(const LockKeys& keys) {
    // companion_key(key, "shared:" + token) == companion_key(key, "shared:") + token for every
    // key shape (see LockKeys::make on the wake-up lists), so the script can name each record.
    return companion_key(keys.key, "shared:");
}

AcquireResult LockNode::acquire_shared(const LockKeys& keys, const std::string& token, Millis ttl,
                                       const HolderInfo* info, Queueing queueing) {
    // As LockNode::acquire: a waiter's ':alive' outlasts its block plus the retry after it.
    Millis alive_grace = 2 * conn_.timeouts().command + Millis(1000);
    std::vector<std::string> args{token, std::to_string(ttl.count()),
                                  queueing == Queueing::wait ? "1" : "",
                                  std::to_string(alive_grace.count()),
                                  std::to_string(no_ttl_recheck.count())};
    if (info) {
        auto fields = info->own_fields();
        args.insert(args.end(), fields.begin(), fields.end());
    }
    Reply reply = run_shared(conn_, keys, "acquire", std::move(args),
                             BootClock::now() + conn_.timeouts().command);
    throw_if_permits_mismatch(reply, keys);
    AcquireResult result = acquire_result(reply, keys.key);
    result.holder.reset();  // the busy reply carries no holder info
    return result;
}

RenewResult LockNode::renew_shared(const LockKeys& keys, const std::string& token, Millis ttl,
                                   Deadline deadline) {
    conn_.ensure_connected(deadline);
    Reply reply = run_shared(conn_, keys, "renew", {token, std::to_string(ttl.count())}, deadline);
    return renew_result(reply, keys.key);
}

ReleaseResult LockNode::release_shared(const LockKeys& keys, const std::string& token,
                                       Millis keep) {
    Reply reply = run_shared(conn_, keys, "release", {token, std::to_string(keep.count())},
                             BootClock::now() + conn_.timeouts().command);
    return release_result(reply, keys.key);
}

bool LockNode::abandon_shared(const LockKeys& keys, const std::string& token) {
    Reply reply =
        run_shared(conn_, keys, "abandon", {token}, BootClock::now() + conn_.timeouts().command);
    return abandon_result(reply, keys.key);
}

bool LockNode::holds_shared(const LockKeys& keys, const std::string& token) {
    Reply reply =
        run_shared(conn_, keys, "holds", {token}, BootClock::now() + conn_.timeouts().command);
    const redisReply& r = check(reply, fmt::format("checking the inherited lock '{}'", keys.key));
    return r.type == REDIS_REPLY_INTEGER && r.integer == 1;
}

PermitsState read_shared(Connection& conn, const LockKeys& keys) {
    Reply reply = run_shared(conn, keys, "status", {}, BootClock::now() + conn.timeouts().command);
    const redisReply& r = check(reply, fmt::format("reading the holders of lock '{}'", keys.key));
    if (r.type != REDIS_REPLY_ARRAY || r.elements < 4)
        throw RedisError("unexpected reply from the shared script (is this Redis?)");
    PermitsState s;
    s.shared = integer_or(*r.element[0], 0) == 1;
    if (r.element[1]->type == REDIS_REPLY_STRING) {
        long long fence = 0;
        std::string f = text(*r.element[1]);
        auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), fence);
        if (ec == std::errc() && end == f.data() + f.size() && fence >= 0 && fence < fence_limit)
            s.fence = fence;
    }
    long long seconds =
        std::clamp<long long>(std::atoll(text(*r.element[2]).c_str()), 0, max_unix_seconds);
    long long micros = std::clamp<long long>(std::atoll(text(*r.element[3]).c_str()), 0, 999'999);
    s.redis_now_ms = seconds * 1000 + micros / 1000;
    s.holders = holders_from(r, 4, s.redis_now_ms);
    return s;
}

std::vector<PermitHolder> force_release_shared(Connection& conn, const LockKeys& keys) {
    Reply reply = run_shared(conn, keys, "force", {}, BootClock::now() + conn.timeouts().command);
    const redisReply& r =
        check(reply, fmt::format("force-releasing the shared holders of lock '{}'", keys.key));
    if (r.type != REDIS_REPLY_ARRAY)
        throw RedisError("unexpected reply from the shared script (is this Redis?)");
    return holders_from(r, 0, 0);
}

}  // namespace redlock

#include "lock.hpp"

#include <fmt/format.h>

#include "errors.hpp"
#include "script.hpp"

namespace redlock {
namespace {

long long integer(const redisReply& r, std::string_view what) {
    if (r.type != REDIS_REPLY_INTEGER)
        throw RedisError(fmt::format("unexpected reply type {} from the {} script", r.type, what));
    return r.integer;
}

}  // namespace

bool LockNode::abandon(const LockKeys& keys, const std::string& token) {
    Reply reply = scripts::abandon().run(conn_, {keys.key, keys.info, keys.wait},
                                         {token, std::to_string(wake_linger.count()), keys.wake},
                                         BootClock::now() + conn_.timeouts().command);
    return integer(check(reply, fmt::format("giving up lock '{}'", keys.key)), "abandon") == 1;
}

AcquireResult LockNode::acquire(const LockKeys& keys, const std::string& token, Millis ttl,
                                const HolderInfo* info, Queueing queueing) {
    // A waiter's ':alive' must outlast its block (bounded by the returned TTL) plus the retry
    // that follows it, which a slow server may stretch to a command timeout or two.
    Millis alive_grace = 2 * conn_.timeouts().command + Millis(1000);
    std::vector<std::string> args{
        token,     std::to_string(ttl.count()),         queueing == Queueing::wait ? "1" : "",
        keys.wake, std::to_string(alive_grace.count()), std::to_string(no_ttl_recheck.count())};
    if (info) {
        auto fields = info->own_fields();
        args.insert(args.end(), fields.begin(), fields.end());
    }
    Reply reply = scripts::acquire().run(conn_, {keys.key, keys.fence, keys.info, keys.wait}, args,
                                         BootClock::now() + conn_.timeouts().command);
    const redisReply& r = check(reply, fmt::format("acquiring lock '{}'", keys.key));
    if (r.type != REDIS_REPLY_ARRAY || r.elements < 2)
        throw RedisError("unexpected reply from the acquire script");
    AcquireResult result;
    result.acquired = integer(*r.element[0], "acquire") == 1;
    long long value = integer(*r.element[1], "acquire");
    if (result.acquired)
        result.fence = value;
    else
        result.holder_pttl = value;
    result.holder = holder_from_reply(r, 2);
    return result;
}

RenewResult LockNode::renew(const LockKeys& keys, const std::string& token, Millis ttl,
                            Deadline deadline) {
    conn_.ensure_connected(deadline);
    Reply reply = scripts::renew().run(conn_, {keys.key, keys.info},
                                       {token, std::to_string(ttl.count())}, deadline);
    const redisReply& r = check(reply, fmt::format("renewing lock '{}'", keys.key));
    return integer(r, "renew") == 1 ? RenewResult::renewed : RenewResult::not_owner;
}

ReleaseResult LockNode::release(const LockKeys& keys, const std::string& token, Millis keep) {
    Reply reply = scripts::release().run(
        conn_, {keys.key, keys.info, keys.wait},
        {token, std::to_string(keep.count()), std::to_string(wake_linger.count()), keys.wake},
        BootClock::now() + conn_.timeouts().command);
    const redisReply& r = check(reply, fmt::format("releasing lock '{}'", keys.key));
    switch (integer(r, "release")) {
        case 1:
            return ReleaseResult::released;
        case 0:
            return ReleaseResult::absent;
        default:
            return ReleaseResult::not_owner;
    }
}

}  // namespace redlock

#include "lock.hpp"

#include <fmt/format.h>

#include "errors.hpp"
#include "script.hpp"

namespace redlock {
namespace {

// Words for hiredis's reply type numbers: "type 4" would tell the operator nothing.
std::string_view type_name(int type) {
    switch (type) {
        case REDIS_REPLY_STRING:
            return "a string";
        case REDIS_REPLY_ARRAY:
            return "an array";
        case REDIS_REPLY_INTEGER:
            return "an integer";
        case REDIS_REPLY_NIL:
            return "nil";
        case REDIS_REPLY_STATUS:
            return "a status";
        case REDIS_REPLY_ERROR:
            return "an error";
    }
    return "an unknown type";
}

long long integer(const redisReply& r, std::string_view what) {
    if (r.type != REDIS_REPLY_INTEGER)
        throw RedisError(fmt::format(
            "unexpected reply from the {} script: {} where an integer belongs (is this Redis?)",
            what, type_name(r.type)));
    return r.integer;
}

}  // namespace

void LockNode::leave_queue(const LockKeys& keys, const std::string& token) {
    Reply reply = scripts::wake().run(conn_, {keys.key, keys.wait},
                                      {std::to_string(wake_linger.count()), keys.wake, token},
                                      BootClock::now() + conn_.timeouts().command);
    check(reply, fmt::format("leaving the queue of lock '{}'", keys.key));
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
        throw RedisError(fmt::format(
            "unexpected reply from the acquire script: {} where an array of two belongs (is "
            "this Redis?)",
            r.type == REDIS_REPLY_ARRAY ? fmt::format("an array of {}", r.elements)
                                        : std::string(type_name(r.type))));
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

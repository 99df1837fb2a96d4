#include "lock/lock_replies.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "util/errors.hpp"

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

std::string text(const redisReply& r) {
    return r.str ? std::string(r.str, r.len) : std::string();
}

std::optional<long long> number(const redisReply& r) {
    if (r.type == REDIS_REPLY_INTEGER) return r.integer;
    if (r.type != REDIS_REPLY_STRING) return std::nullopt;
    std::string s = text(r);
    char* end = nullptr;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (s.empty() || *end != '\0') return std::nullopt;
    return v;
}

}  // namespace

AcquireResult acquire_result(const Reply& reply, std::string_view key) {
    const redisReply& r = check(reply, fmt::format("acquiring lock '{}'", key));
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

RenewResult renew_result(const Reply& reply, std::string_view key) {
    const redisReply& r = check(reply, fmt::format("renewing lock '{}'", key));
    return integer(r, "renew") == 1 ? RenewResult::renewed : RenewResult::not_owner;
}

bool abandon_result(const Reply& reply, std::string_view key) {
    const redisReply& r = check(reply, fmt::format("giving up lock '{}'", key));
    return integer(r, "abandon") == 1;
}

ReleaseResult release_result(const Reply& reply, std::string_view key) {
    const redisReply& r = check(reply, fmt::format("releasing lock '{}'", key));
    switch (integer(r, "release")) {
        case 1:
            return ReleaseResult::released;
        case 0:
            return ReleaseResult::absent;
        default:
            return ReleaseResult::not_owner;
    }
}

LockState lock_state_from_reply(const LockKeys& keys, const Reply& reply) {
    const redisReply& r = check(reply, fmt::format("reading lock '{}'", keys.key));
    if (r.type != REDIS_REPLY_ARRAY || r.elements < 6)
        throw RedisError("unexpected reply from the status script");
    LockState s;
    s.keys = keys;
    s.type = text(*r.element[0]);
    if (r.element[1]->type == REDIS_REPLY_STRING) s.token = text(*r.element[1]);
    s.pttl_ms = number(*r.element[2]).value_or(-2);
    s.fence = number(*r.element[3]);
    s.redis_now_ms =
        number(*r.element[4]).value_or(0) * 1000 + number(*r.element[5]).value_or(0) / 1000;
    s.holder = holder_from_reply(r, 6);
    if (s.holder) s.holder->now_ms = s.redis_now_ms;
    return s;
}

}  // namespace redlock

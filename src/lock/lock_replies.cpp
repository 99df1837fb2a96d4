#include "lock/lock_replies.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <climits>
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

// A number in [lo, hi], from an integer or a decimal string; nullopt for anything else (text,
// a value strtoll saturates, one out of range), so no caller does arithmetic on a wild value.
std::optional<long long> number(const redisReply& r, long long lo, long long hi) {
    long long v = 0;
    if (r.type == REDIS_REPLY_INTEGER) {
        v = r.integer;
    } else if (r.type == REDIS_REPLY_STRING) {
        std::string s = reply_text(r);
        char* end = nullptr;
        errno = 0;
        v = std::strtoll(s.c_str(), &end, 10);
        if (s.empty() || *end != '\0' || errno == ERANGE) return std::nullopt;
    } else {
        return std::nullopt;
    }
    if (v < lo || v > hi) return std::nullopt;
    return v;
}

// A TTL as PTTL reports it (-2 no key, -1 no expiry), capped at max_server_ttl: Redis accepts
// expiries thousands of years away, which Millis -> nanoseconds arithmetic cannot hold.
long long pttl_value(long long pttl) {
    return std::clamp<long long>(pttl, -2, max_server_ttl.count());
}

// --once-per's slot as the acquire script computed it, or RedisError: no real clock gives any
// other.
long long checked_slot(const redisReply& r, std::string_view key) {
    std::optional<long long> slot = number(r, -1, max_slot);
    if (!slot)
        throw RedisError(fmt::format(
            "unexpected reply from the acquire script for lock '{}': {} where a --once-per slot "
            "belongs (is this Redis?)",
            key,
            r.type == REDIS_REPLY_STRING ? fmt::format("'{}'", reply_text(r))
                                         : std::string(type_name(r.type))));
    return *slot;
}

// The record of the run that completed a slot, from its field/value list (element `first`
// on). A field out of its range is left out, as an unknown one is: the skip message only
// shows them.
SlotRecord slot_record_from_reply(const redisReply& r, std::size_t first, long long slot) {
    SlotRecord rec;
    rec.slot = slot;
    for (std::size_t i = first; i + 1 < r.elements; i += 2) {
        std::string name = reply_text(*r.element[i]);
        const redisReply& v = *r.element[i + 1];
        if (name == "end_ms")
            rec.end_ms = number(v, 0, max_time_ms).value_or(0);
        else if (name == "host")
            rec.host = reply_text(v);
        else if (name == "pid")
            rec.pid = number(v, 0, INT_MAX).value_or(0);
        else if (name == "fence")
            rec.fence = number(v, 0, fence_limit - 1).value_or(0);
        else if (name == "outcome")
            rec.outcome = reply_text(v);
        else if (name == "exit") {
            if (auto x = number(v, 0, 255)) rec.exit_status = static_cast<int>(*x);
        } else if (name == "restart_s") {
            // Not a record: the restart guard skipped a slot that began before the data was lost.
            rec.restart_s = number(v, 0, max_unix_seconds).value_or(0);
        }
    }
    return rec;
}

}  // namespace

std::string reply_text(const redisReply& r) {
    return r.str ? std::string(r.str, r.len) : std::string();
}

long long checked_fence(long long fence, std::string_view key) {
    if (fence < 1 || fence >= fence_limit)
        throw DataError(fmt::format(
            "lock '{}': fence {} is outside 1..2^62-1 (a fence counter at its limit, or a "
            "server that is not Redis); not running the command",
            key, fence));
    return fence;
}

AcquireResult acquire_result(const Reply& reply, std::string_view key) {
    const redisReply& r = check(reply, fmt::format("acquiring lock '{}'", key));
    if (r.type != REDIS_REPLY_ARRAY || r.elements < 2)
        throw RedisError(fmt::format(
            "unexpected reply from the acquire script: {} where an array of two belongs (is "
            "this Redis?)",
            r.type == REDIS_REPLY_ARRAY ? fmt::format("an array of {}", r.elements)
                                        : std::string(type_name(r.type))));
    AcquireResult result;
    long long status = integer(*r.element[0], "acquire");
    if (status == 3) {
        // The restart guard: {3, left_ms, uptime_s}. Busy, with the time left as the bound.
        if (r.elements < 3)
            throw RedisError(
                "unexpected reply from the acquire script: a held-back reply without the "
                "server's uptime (is this Redis?)");
        std::optional<long long> left = number(*r.element[1], 0, max_server_ttl.count());
        std::optional<long long> uptime = number(*r.element[2], 0, max_unix_seconds);
        if (!left || !uptime)
            throw RedisError(fmt::format(
                "unexpected reply from the acquire script for lock '{}': a held-back reply "
                "whose time left or uptime is out of range (is this Redis?)",
                key));
        result.holder_pttl = *left;
        result.restart_uptime_s = *uptime;
        return result;
    }
    if (status == 2) {
        // --once-per: the slot's run is already done; the lock was not taken.
        result.slot = checked_slot(*r.element[1], key);
        result.slot_done = slot_record_from_reply(r, 2, *result.slot);
        return result;
    }
    result.acquired = status == 1;
    if (result.acquired) {
        // A decimal string (exact above 2^53, unlike a Lua number) or an integer.
        std::optional<long long> fence = number(*r.element[1], LLONG_MIN, LLONG_MAX);
        if (!fence)
            throw RedisError(fmt::format(
                "unexpected reply from the acquire script: {} where a fence belongs (is this "
                "Redis?)",
                type_name(r.element[1]->type)));
        result.fence = checked_fence(*fence, key);
        // Then field/value pairs: 'slot' (--once-per) here, 'permit' for LockNode's permits.
        // 'counter' for a re-sent permits acquire (AcquireResult::counter).
        for (std::size_t i = 2; i + 1 < r.elements; i += 2) {
            std::string field = reply_text(*r.element[i]);
            if (field == "slot") result.slot = checked_slot(*r.element[i + 1], key);
            if (field == "counter") {
                std::optional<long long> c = number(*r.element[i + 1], LLONG_MIN, LLONG_MAX);
                if (!c)
                    throw RedisError(fmt::format(
                        "unexpected reply from the acquire script: {} where a counter belongs",
                        type_name(r.element[i + 1]->type)));
                result.counter = checked_fence(*c, key);
            }
        }
        return result;
    }
    result.holder_pttl = pttl_value(integer(*r.element[1], "acquire"));
    // {0, pttl, 'shared', '1'}: shared holders hold it, whom LockNode::acquire reads apart.
    if (r.elements == 4 && reply_text(*r.element[2]) == "shared") {
        result.shared = true;
        return result;
    }
    result.holder = holder_from_reply(r, 2);
    return result;
}

FinishResult finish_result(const Reply& reply, std::string_view key, bool released) {
    const redisReply& r = check(reply, fmt::format("recording the run of lock '{}'", key));
    if (r.type != REDIS_REPLY_ARRAY || r.elements != 5)
        throw RedisError(fmt::format(
            "unexpected reply from the ledger script for lock '{}' (is this Redis?)", key));
    auto flag = [&](std::size_t i) {
        std::optional<long long> v = number(*r.element[i], 0, 1);
        if (!v)
            throw RedisError(fmt::format(
                "unexpected reply from the ledger script for lock '{}': element {} is not 0 or 1",
                key, i + 1));
        return *v == 1;
    };
    FinishResult out;
    std::optional<long long> now = number(*r.element[0], 0, max_time_ms);
    if (!now)
        throw RedisError(fmt::format(
            "unexpected reply from the ledger script for lock '{}': no time (is this Redis?)",
            key));
    out.record.end_ms = *now;
    out.record.still_held = flag(1);
    out.record.slot_written = flag(2);
    // 2: no release was asked for; else release.lua's own answer.
    std::optional<long long> release = number(*r.element[3], -1, 2);
    if (!release || (*release == 2) == released)
        throw RedisError(fmt::format(
            "unexpected reply from the ledger script for lock '{}': release {} (is this Redis?)",
            key, released ? "missing" : "not asked for"));
    out.release = *release == 0    ? ReleaseResult::absent
                  : *release == -1 ? ReleaseResult::not_owner
                                   : ReleaseResult::released;
    if (r.element[4]->type == REDIS_REPLY_STRING) out.record.problem = reply_text(*r.element[4]);
    return out;
}

WaitStatus wait_status_result(const Reply& reply, std::string_view key) {
    const redisReply& r = check(reply, fmt::format("reading the waiters of lock '{}'", key));
    if (r.type != REDIS_REPLY_ARRAY || r.elements < 2)
        throw RedisError("unexpected reply from the wait_status script");
    WaitStatus s;
    s.busy.holder_pttl = pttl_value(number(*r.element[0], LLONG_MIN, LLONG_MAX).value_or(-2));
    s.place = number(*r.element[1], 0, max_queue_place).value_or(0);
    if (r.elements == 4 && reply_text(*r.element[2]) == "shared") {
        s.busy.shared = true;  // shared holders: the count comes from the waiter's attempts
        return s;
    }
    s.busy.holder = holder_from_reply(r, 2);
    return s;
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
    s.type = reply_text(*r.element[0]);
    if (r.element[1]->type == REDIS_REPLY_STRING) s.token = reply_text(*r.element[1]);
    s.pttl_ms = pttl_value(number(*r.element[2], LLONG_MIN, LLONG_MAX).value_or(-2));
    // A counter at or past the fence limit (or negative) is shown as none: no fence will be
    // handed out from it (acquire.lua refuses it).
    s.fence = number(*r.element[3], 0, fence_limit - 1);
    // TIME: seconds and microseconds. Seconds beyond year ~2^40 ms would overflow the product.
    s.redis_now_ms = number(*r.element[4], 0, max_unix_seconds).value_or(0) * 1000 +
                     number(*r.element[5], 0, 999'999).value_or(0) / 1000;
    s.holder = holder_from_reply(r, 6);
    if (s.holder) s.holder->now_ms = s.redis_now_ms;
    return s;
}

}  // namespace redlock

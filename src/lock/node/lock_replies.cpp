#include "lock/node/lock_replies.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "util/errors.hpp"

namespace redlock {
namespace {

long long integer(ReplyView r, std::string_view what) {
    return r.as_int(LLONG_MIN, LLONG_MAX, [&] {
        return fmt::format(
            "unexpected reply from the {} script: {} where an integer belongs (is this Redis?)",
            what, r.type_name());
    });
}

// A TTL as PTTL reports it (-2 no key, -1 no expiry), capped at max_server_ttl: Redis accepts
// expiries thousands of years away, which Millis -> nanoseconds arithmetic cannot hold.
long long pttl_value(long long pttl) {
    return std::clamp<long long>(pttl, -2, max_server_ttl.count());
}

// --once-per's slot as the acquire script computed it, or UnexpectedReply: no real clock gives
// any other.
long long checked_slot(ReplyView r, std::string_view key) {
    return r.as_number(-1, max_slot, [&] {
        return fmt::format(
            "unexpected reply from the acquire script for lock '{}': {} where a --once-per slot "
            "belongs (is this Redis?)",
            key, r.is_string() ? fmt::format("'{}'", r.text()) : std::string(r.type_name()));
    });
}

// The record of the run that completed a slot, from its field/value list (element `first`
// on). A field out of its range is left out, as an unknown one is: the skip message only
// shows them.
SlotRecord slot_record_from_reply(ReplyView r, std::size_t first, long long slot) {
    SlotRecord rec;
    rec.slot = slot;
    for (std::size_t i = first; i + 1 < r.size(); i += 2) {
        std::string_view name = r[i].text();
        ReplyView v = r[i + 1];
        if (name == "end_ms")
            rec.end_ms = v.number(0, max_time_ms).value_or(0);
        else if (name == "host")
            rec.host = v.text();
        else if (name == "pid")
            rec.pid = v.number(0, INT_MAX).value_or(0);
        else if (name == "fence")
            rec.fence = v.number(0, fence_limit - 1).value_or(0);
        else if (name == "outcome")
            rec.outcome = v.text();
        else if (name == "exit") {
            if (auto x = v.number(0, 255)) rec.exit_status = static_cast<int>(*x);
        } else if (name == "restart_s") {
            // Not a record: the restart guard skipped a slot that began before the data was lost.
            rec.restart_s = v.number(0, max_unix_seconds).value_or(0);
        }
    }
    return rec;
}

}  // namespace

long long checked_fence(long long fence, std::string_view key) {
    if (fence < 1 || fence >= fence_limit)
        throw DataError(fmt::format(
            "lock '{}': fence {} is outside 1..2^62-1 (a fence counter at its limit, or a "
            "server that is not Redis); not running the command",
            key, fence));
    return fence;
}

AcquireResult acquire_result(const Reply& reply, std::string_view key) {
    ReplyView r = check(reply, fmt::format("acquiring lock '{}'", key));
    r.as_array(2, SIZE_MAX, [&] {
        return fmt::format(
            "unexpected reply from the acquire script: {} where an array of two belongs (is "
            "this Redis?)",
            r.is_array() ? fmt::format("an array of {}", r.size()) : std::string(r.type_name()));
    });
    AcquireResult result;
    long long status = integer(r[0], "acquire");
    if (status == 3) {
        // The restart guard: {3, left_ms, uptime_s}. Busy, with the time left as the bound.
        if (r.size() < 3)
            throw UnexpectedReply(
                "unexpected reply from the acquire script: a held-back reply without the "
                "server's uptime (is this Redis?)");
        std::optional<long long> left = r[1].number(0, max_server_ttl.count());
        std::optional<long long> uptime = r[2].number(0, max_unix_seconds);
        if (!left || !uptime)
            throw UnexpectedReply(fmt::format(
                "unexpected reply from the acquire script for lock '{}': a held-back reply "
                "whose time left or uptime is out of range (is this Redis?)",
                key));
        result.holder_pttl = *left;
        result.restart_uptime_s = *uptime;
        return result;
    }
    if (status == 2) {
        // --once-per: the slot's run is already done; the lock was not taken.
        result.slot = checked_slot(r[1], key);
        result.slot_done = slot_record_from_reply(r, 2, *result.slot);
        return result;
    }
    result.acquired = status == 1;
    if (result.acquired) {
        // A decimal string (exact above 2^53, unlike a Lua number) or an integer.
        // Range-checked by checked_fence, which says what is wrong with the number (DataError).
        long long fence = r[1].as_number(LLONG_MIN, LLONG_MAX, [&] {
            return fmt::format(
                "unexpected reply from the acquire script: {} where a fence belongs (is this "
                "Redis?)",
                r[1].type_name());
        });
        result.fence = checked_fence(fence, key);
        // Then field/value pairs: 'slot' (--once-per) here, 'permit' for LockNode's permits.
        // 'counter' for a re-sent permits acquire (AcquireResult::counter).
        for (std::size_t i = 2; i + 1 < r.size(); i += 2) {
            std::string_view field = r[i].text();
            if (field == "slot") result.slot = checked_slot(r[i + 1], key);
            if (field == "counter") {
                long long c = r[i + 1].as_number(LLONG_MIN, LLONG_MAX, [&] {
                    return fmt::format(
                        "unexpected reply from the acquire script: {} where a counter belongs",
                        r[i + 1].type_name());
                });
                result.counter = checked_fence(c, key);
            }
        }
        return result;
    }
    result.holder_pttl = pttl_value(integer(r[1], "acquire"));
    // {0, pttl, 'shared', '1'}: shared holders hold it, whom LockNode::acquire reads apart.
    if (r.size() == 4 && r[2].text() == "shared") {
        result.shared = true;
        return result;
    }
    result.holder = holder_from_reply(r, 2);
    return result;
}

FinishResult finish_result(const Reply& reply, std::string_view key, bool released) {
    ReplyView r = check(reply, fmt::format("recording the run of lock '{}'", key));
    r.as_array(5, 5, [&] {
        return fmt::format("unexpected reply from the ledger script for lock '{}' (is this Redis?)",
                           key);
    });
    auto flag = [&](std::size_t i) {
        return r[i].as_number(0, 1, [&] {
            return fmt::format(
                "unexpected reply from the ledger script for lock '{}': element {} is not 0 or 1",
                key, i + 1);
        }) == 1;
    };
    FinishResult out;
    out.record.end_ms = r[0].as_number(0, max_time_ms, [&] {
        return fmt::format(
            "unexpected reply from the ledger script for lock '{}': no time (is this Redis?)", key);
    });
    out.record.still_held = flag(1);
    out.record.slot_written = flag(2);
    // 2: no release was asked for; else release.lua's own answer.
    std::optional<long long> release = r[3].number(-1, 2);
    if (!release || (*release == 2) == released)
        throw UnexpectedReply(fmt::format(
            "unexpected reply from the ledger script for lock '{}': release {} (is this Redis?)",
            key, released ? "missing" : "not asked for"));
    out.release = *release == 0    ? ReleaseResult::absent
                  : *release == -1 ? ReleaseResult::not_owner
                                   : ReleaseResult::released;
    if (auto problem = r[4].string()) out.record.problem = *problem;
    return out;
}

WaitStatus wait_status_result(const Reply& reply, std::string_view key) {
    ReplyView r = check(reply, fmt::format("reading the waiters of lock '{}'", key));
    r.as_array(2, SIZE_MAX, "unexpected reply from the wait_status script");
    WaitStatus s;
    s.busy.holder_pttl = pttl_value(r[0].number(LLONG_MIN, LLONG_MAX).value_or(-2));
    s.place = r[1].number(0, max_queue_place).value_or(0);
    if (r.size() == 4 && r[2].text() == "shared") {
        s.busy.shared = true;  // shared holders: the count comes from the waiter's attempts
        return s;
    }
    s.busy.holder = holder_from_reply(r, 2);
    return s;
}

RenewResult renew_result(const Reply& reply, std::string_view key) {
    ReplyView r = check(reply, fmt::format("renewing lock '{}'", key));
    return integer(r, "renew") == 1 ? RenewResult::renewed : RenewResult::not_owner;
}

bool abandon_result(const Reply& reply, std::string_view key) {
    ReplyView r = check(reply, fmt::format("giving up lock '{}'", key));
    return integer(r, "abandon") == 1;
}

ReleaseResult release_result(const Reply& reply, std::string_view key) {
    ReplyView r = check(reply, fmt::format("releasing lock '{}'", key));
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
    ReplyView r = check(reply, fmt::format("reading lock '{}'", keys.key));
    r.as_array(6, SIZE_MAX, "unexpected reply from the status script");
    LockState s;
    s.keys = keys;
    s.type = r[0].text();
    if (auto token = r[1].string()) s.token = *token;
    s.pttl_ms = pttl_value(r[2].number(LLONG_MIN, LLONG_MAX).value_or(-2));
    // A counter at or past the fence limit (or negative) is shown as none: no fence will be
    // handed out from it (acquire.lua refuses it).
    s.fence = r[3].number(0, fence_limit - 1);
    // TIME: seconds and microseconds. Seconds beyond year ~2^40 ms would overflow the product.
    s.redis_now_ms = r[4].number(0, max_unix_seconds).value_or(0) * 1000 +
                     r[5].number(0, 999'999).value_or(0) / 1000;
    s.holder = holder_from_reply(r, 6);
    if (s.holder) s.holder->now_ms = s.redis_now_ms;
    return s;
}

}  // namespace redlock

#include "lock/waiters.hpp"

#include <fmt/format.h>

#include <climits>
#include <optional>

#include "lock/lock_replies.hpp"
#include "lock/scripts.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"
#include "util/number.hpp"

namespace redlock {
namespace {

// `text` as a decimal within [0, hi], or nullopt.
std::optional<long long> in_range(std::string_view text, long long hi) {
    return parse_integer(text, 0, hi);
}

// '<since_ms> <pid> <host>' as lib/queue.lua writes it. A record out of shape, or a number out
// of range, leaves the fields it spoils unknown: the waiter still shows, in its place.
void read_record(std::string_view who, Waiter& w) {
    std::size_t a = who.find(' ');
    if (a == std::string_view::npos) return;
    std::size_t b = who.find(' ', a + 1);
    if (b == std::string_view::npos) return;
    w.since_ms = in_range(who.substr(0, a), max_unix_seconds * 1000).value_or(0);
    w.pid = in_range(who.substr(a + 1, b - a - 1), INT_MAX).value_or(0);
    // Cut as the script cuts it: a longer one is not from our script.
    w.host = std::string(who.substr(b + 1, 255));
}

}  // namespace

Waiters waiters_from_reply(const Reply& reply, std::string_view key) {
    const redisReply& r = check(reply, fmt::format("reading the waiters of lock '{}'", key));
    auto bad = [&] {
        return RedisError(fmt::format(
            "unexpected reply from the waiters script for lock '{}' (is this Redis?)", key));
    };
    if (r.type != REDIS_REPLY_ARRAY || r.elements < 2 || r.elements % 2 != 0) throw bad();
    // Both the count and the entries are bounded by what the script reads.
    if (r.elements - 2 > 2 * max_waiters_read) throw bad();
    const redisReply& now = *r.element[0];
    const redisReply& total = *r.element[1];
    if (now.type != REDIS_REPLY_STRING || total.type != REDIS_REPLY_INTEGER) throw bad();
    std::optional<long long> now_ms = in_range(reply_text(now), max_unix_seconds * 1000);
    if (!now_ms || total.integer < 0) throw bad();
    Waiters out;
    out.redis_now_ms = *now_ms;
    out.total = static_cast<std::size_t>(total.integer);
    for (std::size_t i = 2; i + 1 < r.elements; i += 2) {
        const redisReply& mark = *r.element[i];
        const redisReply& who = *r.element[i + 1];
        if (mark.type != REDIS_REPLY_STRING) throw bad();
        Waiter w;
        w.shared = reply_text(mark) == "shared";
        if (who.type == REDIS_REPLY_STRING)
            read_record(reply_text(who), w);
        else if (who.type != REDIS_REPLY_NIL)
            throw bad();
        out.waiting.push_back(std::move(w));
    }
    // A queue shorter than the waiters listed is no queue Redis keeps.
    if (out.total < out.waiting.size()) out.total = out.waiting.size();
    return out;
}

Waiters read_waiters(Connection& conn, const LockKeys& keys) {
    conn.set_home_key(keys.key);
    return waiters_from_reply(
        scripts::waiters().run(conn, {keys.wait}, {keys.wake, std::to_string(max_waiters_read)},
                               conn.timeouts().command),
        keys.key);
}

Waiters waiters_or_none(Connection& conn, const LockKeys& keys) {
    try {
        return read_waiters(conn, keys);
    } catch (const Error& e) {
        log::verbose("could not read the waiters of lock '{}': {}", keys.key, e.what());
        return {};
    }
}

}  // namespace redlock

#include "lock/node/waiters.hpp"

#include <fmt/format.h>

#include <climits>
#include <optional>

#include "lock/node/lock_replies.hpp"
#include "lock/node/scripts.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"
#include "util/number.hpp"

namespace redlock {
namespace {

// '<since_ms> <pid> <host>' as lib/queue.lua writes it. A record out of shape, or a number out
// of range, leaves the fields it spoils unknown: the waiter still shows, in its place.
void read_record(std::string_view who, Waiter& w) {
    std::size_t a = who.find(' ');
    if (a == std::string_view::npos) return;
    std::size_t b = who.find(' ', a + 1);
    if (b == std::string_view::npos) return;
    w.since_ms = parse_integer(who.substr(0, a), 0, max_unix_seconds * 1000).value_or(0);
    w.pid = parse_integer(who.substr(a + 1, b - a - 1), 0, INT_MAX).value_or(0);
    // Cut as the script cuts it: a longer one is not from our script.
    w.host = std::string(who.substr(b + 1, 255));
}

}  // namespace

Waiters waiters_from_reply(const Reply& reply, std::string_view key) {
    ReplyView r = check(reply, fmt::format("reading the waiters of lock '{}'", key));
    auto bad = [&] {
        return fmt::format(
            "unexpected reply from the waiters script for lock '{}' (is this Redis?)", key);
    };
    // Both the count and the entries are bounded by what the script reads.
    r.as_array(2, 2 + 2 * max_waiters_read, bad);
    if (r.size() % 2 != 0) throw UnexpectedReply(bad());
    // A string (the script's TIME arithmetic), not any number: as_number takes integers too.
    std::optional<long long> now_ms =
        parse_integer(r[0].as_string(bad), 0, max_unix_seconds * 1000);
    if (!now_ms) throw UnexpectedReply(bad());
    Waiters out;
    out.redis_now_ms = *now_ms;
    out.total = static_cast<std::size_t>(r[1].as_int(0, LLONG_MAX, bad));
    for (std::size_t i = 2; i + 1 < r.size(); i += 2) {
        ReplyView who = r[i + 1];
        Waiter w;
        w.shared = r[i].as_string(bad) == "shared";
        if (who.is_string())
            read_record(who.text(), w);
        else if (!who.is_nil())
            throw UnexpectedReply(bad());
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

Waiters waiters_or_none(const Reply& reply, const LockKeys& keys) {
    try {
        return waiters_from_reply(reply, keys.key);
    } catch (const Error& e) {
        log::verbose("could not read the waiters of lock '{}': {}", keys.key, e.what());
        return {};
    }
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

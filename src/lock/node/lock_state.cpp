#include "lock/node/lock_state.hpp"

#include <fmt/format.h>

#include <climits>
#include <cstdint>

#include "lock/node/lock_mode.hpp"
#include "lock/node/lock_replies.hpp"
#include "lock/node/scripts.hpp"
#include "util/errors.hpp"

namespace redlock {
namespace {

// Replies of one pipelined batch: enough to amortise the round trip, small enough to keep a
// batch well inside the command timeout.
constexpr std::size_t batch_size = 256;

}  // namespace

LockState read_lock_state(Connection& conn, const LockKeys& keys) {
    return checked_lock_state(keys, scripts::status().run(conn, {keys.key, keys.fence, keys.info},
                                                          {}, conn.timeouts().command));
}

LockState checked_lock_state(const LockKeys& keys, const Reply& reply) {
    LockState s = lock_state_from_reply(keys, reply);
    if (!s.is_lock())
        throw DataError(fmt::format("key '{}' holds a {}, not a lock token", keys.key, s.type));
    return s;
}

std::vector<LockState> read_lock_states(Connection& conn, const std::vector<LockKeys>& keys) {
    std::vector<LockState> states;
    states.reserve(keys.size());
    for (std::size_t begin = 0; begin < keys.size(); begin += batch_size) {
        std::size_t end = std::min(keys.size(), begin + batch_size);
        std::vector<ReadCall> calls;
        for (std::size_t i = begin; i < end; ++i)
            calls.push_back({&scripts::status(), {keys[i].key, keys[i].fence, keys[i].info}, {}});
        // The script cache is empty after a restart or SCRIPT FLUSH: run_read_only sends the
        // bodies of the whole batch in one more write, not one round trip per lock.
        std::vector<Reply> replies =
            run_read_only(conn, calls, BootClock::now() + conn.timeouts().command);
        for (std::size_t i = begin; i < end; ++i)
            states.push_back(lock_state_from_reply(keys[i], replies[i - begin]));
    }
    return states;
}

std::optional<LockState> force_release_lock(Connection& conn, const LockKeys& keys) {
    Reply reply = scripts::force_release().run(conn, {keys.key, keys.info, keys.wait},
                                               {std::to_string(wake_linger.count()), keys.wake},
                                               conn.timeouts().command);
    constexpr std::string_view bad = "unexpected reply from the force_release script";
    ReplyView r = check(reply, fmt::format("force-releasing lock '{}'", keys.key));
    r.as_array(1, SIZE_MAX, bad);
    if (r[0].as_int(LLONG_MIN, LLONG_MAX, bad) == 0) return std::nullopt;
    // {1, token, pttl, info...}: a PTTL below -1 (no key) cannot follow a key just read.
    r.as_array(3, SIZE_MAX, bad);
    LockState was;
    was.keys = keys;
    was.type = "string";
    was.token = r[1].as_string(bad);
    was.pttl_ms = r[2].as_int(-1, LLONG_MAX, bad);
    was.holder = holder_from_reply(r, 3);
    return was;
}

}  // namespace redlock

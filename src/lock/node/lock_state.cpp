#include "lock/node/lock_state.hpp"

#include <fmt/format.h>

#include <climits>
#include <cstdint>

#include "lock/node/lock_mode.hpp"
#include "lock/node/lock_replies.hpp"
#include "lock/node/scripts.hpp"
#include "util/errors.hpp"

namespace redlock {

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

// release: end a lock by hand. --token T is the safe form (compare-and-delete through the same
// script a run uses, so waiters are woken); --force deletes whatever holds the lock, for a holder
// that is gone and whose token nobody has.
#include <fmt/format.h>

#include <cstdio>

#include "inspect/inspect.hpp"
#include "inspect/lock_report.hpp"
#include "inspect/permits_report.hpp"
#include "inspect/quorum_inspect.hpp"
#include "lock/lock.hpp"
#include "lock/lock_state.hpp"
#include "lock/scripts.hpp"
#include "util/errors.hpp"
#include "util/exit_codes.hpp"
#include "util/log.hpp"
#include "util/printable.hpp"

namespace redlock {
namespace {

void say(const std::string& line) {
    std::fputs((line + "\n").c_str(), stdout);
}

int not_held(const LockKeys& keys) {
    say(fmt::format("lock '{}' is not held; nothing to release", printable(keys.name)));
    return exit_code::ok;
}

// "deploy@web-2 pid 4120 (command 'backup --full', token 3f2a9c1e...)" or
// "an unknown holder (token 3f2a9c1e...)".
std::string whose(const LockState& lock, bool verbose) {
    std::string token = shown_token(lock.token, verbose);
    if (!lock.holder) return fmt::format("an unknown holder (token {})", token);
    // The command line is recorded only with --hold-info.
    if (lock.holder->command.empty()) return fmt::format("{} (token {})", holder_text(lock), token);
    return fmt::format("{} (command '{}', token {})", holder_text(lock),
                       printable(lock.holder->command), token);
}

int release_with_token(Connection& conn, const LockKeys& keys, const std::string& token,
                       bool verbose) {
    LockNode node(conn);
    switch (node.release(keys, token)) {
        case ReleaseResult::released:
            say(fmt::format("released lock '{}'", printable(keys.name)));
            return exit_code::ok;
        case ReleaseResult::absent:
            return not_held(keys);
        case ReleaseResult::not_owner:
            break;
    }
    // Read after the refusal, so only informative: the holder may have changed in between.
    LockState now = read_lock_state(conn, keys);
    if (!now.held()) return not_held(keys);
    throw NotOwner(fmt::format("lock '{}' is held by {}, not by token {}; not released",
                               printable(keys.name), whose(now, verbose),
                               shown_token(token, verbose)));
}

int force_release(Connection& conn, const LockKeys& keys, bool verbose) {
    Reply reply = scripts::force_release().run(conn, {keys.key, keys.info, keys.wait},
                                               {std::to_string(wake_linger.count()), keys.wake},
                                               BootClock::now() + conn.timeouts().command);
    const redisReply& r = check(reply, fmt::format("force-releasing lock '{}'", keys.key));
    if (r.type != REDIS_REPLY_ARRAY || r.elements < 1 || r.element[0]->type != REDIS_REPLY_INTEGER)
        throw RedisError("unexpected reply from the force_release script");
    if (r.element[0]->integer == 0) return not_held(keys);
    if (r.elements < 3) throw RedisError("unexpected reply from the force_release script");
    LockState was;
    was.keys = keys;
    was.type = "string";
    was.token.assign(r.element[1]->str ? r.element[1]->str : "", r.element[1]->len);
    was.pttl_ms = r.element[2]->integer;
    was.holder = holder_from_reply(r, 3);
    say(fmt::format("released lock '{}' held by {}, {}", printable(keys.name), whose(was, verbose),
                    was.pttl_ms >= 0 ? "which had " + ttl_text(was) + " left"
                                     : std::string("which had no expiry")));
    return exit_code::ok;
}

}  // namespace

int release_command(const InspectOptions& options) {
    if (!options.conn.quorum.empty()) return quorum_release_command(options);
    log::set_verbose(options.conn.verbose);
    Connection conn(options.conn.endpoint, options.conn.timeouts);
    LockKeys keys = LockKeys::make(options.name, options.conn.prefix);
    // --permits N: the key holds the record of N, the holders are the permits.
    if (LockState now = read_lock_state(conn, keys); now.held()) {
        if (std::optional<int> permits = permits_of(now.token)) {
            if (options.token)
                return release_permit_with_token(conn, keys, *permits, *options.token,
                                                 options.conn.verbose);
            return force_release_all_permits(conn, keys, options.conn.verbose);
        }
        // --shared: the key holds a marker, the holders are listed apart.
        if (now.token == shared_marker) {
            if (options.token)
                return release_shared_with_token(conn, keys, *options.token,
                                                 options.conn.verbose);
            return force_release_all_shared(conn, keys, options.conn.verbose);
        }
    }
    if (options.token) return release_with_token(conn, keys, *options.token, options.conn.verbose);
    return force_release(conn, keys, options.conn.verbose);
}

}  // namespace redlock

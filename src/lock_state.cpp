#include "lock_state.hpp"

#include <fmt/format.h>

#include <cstdlib>

#include "errors.hpp"
#include "script.hpp"

namespace redlock {
namespace {

// Replies of one pipelined batch: enough to amortise the round trip, small enough to keep a
// batch well inside the command timeout.
constexpr std::size_t batch_size = 256;

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

std::vector<std::string> status_argv(const LockKeys& keys) {
    return {"EVALSHA", scripts::status().sha1(), "3", keys.key, keys.fence, keys.info};
}

LockState parse(const LockKeys& keys, const Reply& reply) {
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

}  // namespace

LockState read_lock_state(Connection& conn, const LockKeys& keys) {
    Reply reply = scripts::status().run(conn, {keys.key, keys.fence, keys.info}, {},
                                        BootClock::now() + conn.timeouts().command);
    LockState s = parse(keys, reply);
    if (!s.is_lock())
        throw DataError(fmt::format("key '{}' holds a {}, not a lock token", keys.key, s.type));
    return s;
}

std::vector<LockState> read_lock_states(Connection& conn, const std::vector<LockKeys>& keys) {
    std::vector<LockState> states;
    states.reserve(keys.size());
    for (std::size_t begin = 0; begin < keys.size(); begin += batch_size) {
        std::size_t end = std::min(keys.size(), begin + batch_size);
        std::vector<std::vector<std::string>> commands;
        for (std::size_t i = begin; i < end; ++i) commands.push_back(status_argv(keys[i]));
        std::vector<Reply> replies =
            conn.pipeline(commands, BootClock::now() + conn.timeouts().command);
        for (std::size_t i = begin; i < end; ++i) {
            Reply& reply = replies[i - begin];
            // The script cache is empty after a restart or SCRIPT FLUSH; Script::run loads it.
            if (error_text(*reply).starts_with("NOSCRIPT"))
                reply = scripts::status().run(conn, {keys[i].key, keys[i].fence, keys[i].info}, {},
                                              BootClock::now() + conn.timeouts().command);
            states.push_back(parse(keys[i], reply));
        }
    }
    return states;
}

}  // namespace redlock

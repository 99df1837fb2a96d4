#include "inspect/permits_report.hpp"

#include <fmt/format.h>

#include "inspect/lock_report.hpp"
#include "util/printable.hpp"

namespace redlock {
namespace {

// One holder as a LockState, so that the plain lock's wording (holder_text, ttl_text, ...)
// serves it too.
LockState holder_state(const LockState& lock, const PermitHolder& h, long long redis_now_ms) {
    LockState s;
    s.keys = lock.keys;
    s.type = "string";
    s.token = h.token;
    s.pttl_ms = h.pttl_ms;
    s.redis_now_ms = redis_now_ms;
    s.holder = h.holder;
    return s;
}

// "permit 2: deploy@web-2 pid 4120 (command 'backup', token 3f2a9c1e...), 28s left"; without a
// recorded command line (no --hold-info), no "command ''".
std::string holder_line(const LockState& lock, const PermitHolder& h, long long now, bool verbose) {
    LockState s = holder_state(lock, h, now);
    std::string command = h.holder && !h.holder->command.empty()
                              ? fmt::format("command '{}', ", printable(h.holder->command))
                              : std::string();
    std::string who =
        h.holder
            ? fmt::format("{} ({}token {})", holder_text(s), command, shown_token(h.token, verbose))
            : fmt::format("an unknown holder (token {})", shown_token(h.token, verbose));
    return fmt::format("{}: {}, {}",
                       h.permit > 0 ? fmt::format("permit {}", h.permit) : "shared holder", who,
                       h.pttl_ms >= 0 ? ttl_text(s) + " left" : std::string("no expiry"));
}

}  // namespace

std::string permits_summary(const PermitsState& permits) {
    if (permits.shared)
        return fmt::format("{} shared holder{}", permits.holders.size(),
                           permits.holders.size() == 1 ? "" : "s");
    return fmt::format("{} of {} held", permits.holders.size(), permits.permits);
}

void write_permits_json(JsonWriter& out, const LockState& lock, const PermitsState& permits,
                        const Waiters* waiters) {
    out.begin_object();
    out.key("name").value(lock.keys.name);
    out.key("key").value(lock.keys.key);
    out.key("held").value(!permits.holders.empty());
    out.key("token").null();
    out.key("ttl_ms");
    if (lock.pttl_ms >= 0 && !permits.holders.empty())
        out.value(lock.pttl_ms);
    else
        out.null();
    out.key("fence");
    if (permits.fence)
        out.value(*permits.fence);
    else
        out.null();
    out.key("holder").null();
    out.key("redis_time_ms").value(permits.redis_now_ms);
    if (permits.shared) {
        out.key("shared").value(true);
    } else {
        out.key("permits").value(permits.permits);
        out.key("held_permits").value(static_cast<long long>(permits.holders.size()));
    }
    out.key("holders").begin_array();
    for (const PermitHolder& h : permits.holders) {
        out.begin_object();
        if (!permits.shared) out.key("permit").value(h.permit);
        out.key("token").value(h.token);
        out.key("ttl_ms");
        if (h.pttl_ms >= 0)
            out.value(h.pttl_ms);
        else
            out.null();
        out.key("fence");
        if (h.holder && h.holder->fence > 0)
            out.value(h.holder->fence);
        else
            out.null();
        out.key("holder");
        if (h.holder) {
            const HolderInfo& i = *h.holder;
            out.begin_object();
            out.key("host").value(i.host);
            out.key("pid").value(i.pid);
            out.key("user").value(i.user);
            out.key("command").value(i.command);
            out.key("acquired_ms").value(i.acquired_ms);
            out.key("held_ms").value(
                i.acquired_ms > 0 ? std::max(0LL, permits.redis_now_ms - i.acquired_ms) : -1LL);
            out.key("lease_ms").value(i.ttl_ms);
            out.end_object();
        } else {
            out.null();
        }
        out.end_object();
    }
    out.end_array();
    if (waiters) write_waiters_json(out, *waiters);
    out.end_object();
}

std::string permits_status_text(const LockState& lock, const PermitsState& permits, bool verbose) {
    std::string out;
    auto line = [&](std::string_view label, const std::string& value) {
        out += fmt::format("{:<12}{}\n", fmt::format("{}:", label), value);
    };
    line("name", printable(lock.keys.name));
    line("key", printable(lock.keys.key));
    line("state", permits.holders.empty() ? "free" : "held");
    line(permits.shared ? "holders" : "permits", permits_summary(permits));
    int n = 0;
    for (const PermitHolder& h : permits.holders) {
        LockState s = holder_state(lock, h, permits.redis_now_ms);
        ++n;
        line(permits.shared ? fmt::format("shared {}", n) : fmt::format("permit {}", h.permit),
             fmt::format("{}, {} left, token {}", holder_text(s),
                         h.pttl_ms >= 0 ? ttl_text(s) : std::string("no expiry"),
                         shown_token(h.token, verbose)));
        if (h.holder) {
            // Recorded only with --hold-info: an empty line says nothing.
            if (!h.holder->command.empty()) line("  command", printable(h.holder->command));
            if (h.holder->fence > 0) line("  fence", std::to_string(h.holder->fence));
            if (h.holder->acquired_ms > 0)
                line("  acquired",
                     fmt::format("{} ({} ago)", local_time_text(h.holder->acquired_ms),
                                 held_for_text(s)));
        }
    }
    line("fence", permits.fence ? std::to_string(*permits.fence) : std::string("-"));
    return out;
}

std::string permit_holder_line(const LockState& lock, const PermitHolder& h, bool verbose) {
    return holder_line(lock, h, 0, verbose);
}

}  // namespace redlock

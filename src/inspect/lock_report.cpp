#include "inspect/lock_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <ctime>

#include "util/duration.hpp"
#include "util/printable.hpp"

namespace redlock {
namespace {

// Whole seconds read better than "1m12.512s" for an age; below a second, milliseconds.
long long rounded_age(long long ms) {
    return ms >= 1000 ? ms - ms % 1000 : ms;
}

long long held_ms(const LockState& lock) {
    if (!lock.holder || lock.holder->acquired_ms <= 0) return -1;
    long long age = lock.redis_now_ms - lock.holder->acquired_ms;
    return age < 0 ? 0 : age;
}

}  // namespace

void write_lock_json(JsonWriter& out, const LockState& lock, const LastRuns* runs,
                     const Waiters* waiters) {
    out.begin_object();
    write_lock_fields(out, lock);
    if (runs) write_last_runs_json(out, *runs);
    if (waiters) write_waiters_json(out, *waiters);
    out.end_object();
}

void write_lock_fields(JsonWriter& out, const LockState& lock) {
    out.key("name").value(lock.keys.name);
    out.key("key").value(lock.keys.key);
    out.key("held").value(lock.held());
    out.key("token");
    if (lock.held())
        out.value(lock.token);
    else
        out.null();
    out.key("ttl_ms");
    if (lock.held() && lock.pttl_ms >= 0)
        out.value(lock.pttl_ms);
    else
        out.null();
    out.key("fence");
    if (lock.fence)
        out.value(*lock.fence);
    else
        out.null();
    out.key("holder");
    if (lock.holder) {
        const HolderInfo& h = *lock.holder;
        out.begin_object();
        out.key("host").value(h.host);
        out.key("pid").value(h.pid);
        out.key("user").value(h.user);
        out.key("command").value(h.command);
        out.key("acquired_ms").value(h.acquired_ms);
        out.key("held_ms").value(held_ms(lock));
        out.key("lease_ms").value(h.ttl_ms);
        out.key("fence").value(h.fence);
        out.end_object();
    } else {
        out.null();
    }
    out.key("redis_time_ms").value(lock.redis_now_ms);
}

namespace {

// How long a waiter has waited, by Redis's clock; -1 when unknown.
long long waited_ms(const Waiters& all, const Waiter& w) {
    if (w.since_ms <= 0 || all.redis_now_ms <= 0) return -1;
    return std::max(0LL, all.redis_now_ms - w.since_ms);
}

}  // namespace

void write_waiters_json(JsonWriter& out, const Waiters& waiters) {
    out.key("waiting").value(static_cast<long long>(waiters.total));
    out.key("waiters").begin_array();
    long long position = 0;
    for (const Waiter& w : waiters.waiting) {
        out.begin_object();
        out.key("position").value(++position);
        out.key("host").value(w.host);
        out.key("pid").value(w.pid);
        out.key("since_ms").value(w.since_ms);
        out.key("waiting_ms").value(waited_ms(waiters, w));
        out.key("mode").value(std::string(w.shared ? "shared" : "exclusive"));
        out.end_object();
    }
    out.end_array();
}

std::string waiters_text(const Waiters& waiters, const std::string& from) {
    if (waiters.waiting.empty()) return {};
    std::string out = fmt::format(
        "waiting:  {}{}\n", waiters.waiting.size(),
        from.empty() ? std::string() : fmt::format(" (queue of node {})", printable(from)));
    std::size_t position = 0;
    for (const Waiter& w : waiters.waiting) {
        long long ms = waited_ms(waiters, w);
        out += fmt::format(
            "  {}. {} pid {}, waiting {}, {}\n", ++position,
            w.host.empty() ? std::string("unknown") : printable(w.host), w.pid,
            ms < 0 ? std::string("for an unknown time") : format_duration(Millis(rounded_age(ms))),
            w.shared ? "shared" : "exclusive");
    }
    // status reads a bounded part of a long queue (max_waiters_read); the count may include
    // entries of waiters that died and are not yet dropped.
    if (waiters.total > waiters.waiting.size() && waiters.waiting.size() >= max_waiters_read)
        out += fmt::format("  ... and up to {} more\n", waiters.total - waiters.waiting.size());
    return out;
}

void write_entry_json(JsonWriter& j, const LedgerEntry& e) {
    j.begin_object();
    j.key("start_ms").value(e.start_ms);
    j.key("end_ms").value(e.end_ms);
    j.key("duration_ms").value(e.duration_ms);
    j.key("outcome").value(e.outcome);
    j.key("host").value(e.host);
    j.key("pid").value(e.pid);
    j.key("user").value(e.user);
    j.key("exit_status");
    e.exit_status ? j.value(*e.exit_status) : j.null();
    j.key("signal");
    e.signal ? j.value(*e.signal) : j.null();
    j.key("fence").value(e.fence);
    if (!e.command.empty()) j.key("command").value(e.command);
    j.end_object();
}

void write_last_runs_json(JsonWriter& out, const LastRuns& runs) {
    for (const auto& [key, entry] :
         {std::pair{"last_run", &runs.last}, std::pair{"last_success", &runs.last_success}}) {
        out.key(key);
        if (*entry)
            write_entry_json(out, **entry);
        else
            out.null();
    }
}

std::string shown_token(std::string_view token, bool verbose) {
    constexpr std::size_t shown = 8;
    if (verbose || token.size() <= shown + 3) return printable(token);
    return printable(token.substr(0, shown)) + "...";
}

std::string holder_text(const LockState& lock) {
    if (!lock.holder) return "unknown";
    const HolderInfo& h = *lock.holder;
    std::string who =
        h.user.empty() ? printable(h.host) : printable(h.user) + "@" + printable(h.host);
    return fmt::format("{} pid {}", who, h.pid);
}

std::string held_for_text(const LockState& lock) {
    long long age = held_ms(lock);
    return age < 0 ? std::string() : format_duration(Millis(rounded_age(age)));
}

std::string ttl_text(const LockState& lock) {
    if (!lock.held()) return "-";
    if (lock.pttl_ms < 0) return "no expiry";
    return format_duration(Millis(lock.pttl_ms));
}

std::string local_time_text(long long unix_ms) {
    std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[64];
    std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %z", &tm);
    return std::string(buf, n);
}

}  // namespace redlock

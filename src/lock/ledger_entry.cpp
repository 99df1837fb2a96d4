// The pure part of the run ledger (ledger.hpp): an entry's stored form, read with every number
// checked against its domain.
#include <fmt/format.h>

#include <sys/types.h>

#include <charconv>
#include <limits>
#include <set>

#include "lock/ledger.hpp"
#include "lock/lock_replies.hpp"
#include "util/errors.hpp"
#include "util/excerpt.hpp"
#include "util/printable.hpp"

namespace redlock {
namespace {

std::optional<long long> to_number(std::string_view s) {
    long long v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
    return v;
}

void escape_into(std::string& out, std::string_view v) {
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\t')
            out += "\\t";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
}

std::string unescape(std::string_view v) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (v[i] != '\\' || i + 1 == v.size()) {
            out += v[i];
            continue;
        }
        char c = v[++i];
        out += c == 't' ? '\t' : c == 'n' ? '\n' : c;
    }
    return out;
}

}  // namespace

std::string encode_entry(const LedgerEntry& e) {
    std::string out;
    auto field = [&](std::string_view name, std::string_view value) {
        if (!out.empty()) out += '\t';
        out += name;
        out += '=';
        escape_into(out, value);
    };
    field("duration_ms", std::to_string(e.duration_ms));
    field("host", e.host);
    field("pid", std::to_string(e.pid));
    field("user", e.user);
    if (e.exit_status) field("exit", std::to_string(*e.exit_status));
    if (e.signal) field("signal", std::to_string(*e.signal));
    field("fence", std::to_string(e.fence));
    if (!e.command.empty()) field("command", e.command);
    return out;
}

LedgerEntry decode_entry(std::string_view stored) {
    LedgerEntry e;
    // Every number is checked against its domain where it is read: the entry comes from a server
    // (a hostile one, or a key anyone with write access set), and a number no run can have, once
    // shown or computed with (a duration negated, a time turned into a date), misleads or worse.
    // One bad field rejects the whole entry: a row half made of defaults would look real.
    std::set<std::string_view> seen;
    auto number = [&](std::string_view name, std::string_view value, long long min, long long max) {
        std::optional<long long> n = to_number(value);
        if (!n || *n < min || *n > max)
            throw DataError(fmt::format("ledger entry: {} '{}' is not a number in {}..{}", name,
                                        excerpt(printable(value), 30), min, max));
        return *n;
    };
    while (!stored.empty()) {
        std::size_t tab = stored.find('\t');
        std::string_view pair = stored.substr(0, tab);
        stored = tab == std::string_view::npos ? std::string_view() : stored.substr(tab + 1);
        std::size_t eq = pair.find('=');
        if (eq == std::string_view::npos) continue;
        std::string_view name = pair.substr(0, eq);
        std::string value = unescape(pair.substr(eq + 1));
        if (name == "end_ms")
            e.end_ms = number(name, value, min_entry_time_ms, max_time_ms - 1);
        else if (name == "start_ms")
            e.start_ms = number(name, value, min_entry_time_ms, max_time_ms - 1);
        else if (name == "duration_ms")
            e.duration_ms = number(name, value, 0, max_time_ms - min_entry_time_ms);
        else if (name == "outcome")
            e.outcome = value;
        else if (name == "host")
            e.host = value;
        else if (name == "pid")
            e.pid = number(name, value, 1, std::numeric_limits<pid_t>::max());
        else if (name == "user")
            e.user = value;
        else if (name == "exit")
            e.exit_status = static_cast<int>(number(name, value, 0, 255));
        else if (name == "signal")
            // WTERMSIG is 7 bits; 0 is no signal.
            e.signal = static_cast<int>(number(name, value, 1, 127));
        else if (name == "fence")
            // 0: the run never held the lock; a counter never reaches fence_limit.
            e.fence = number(name, value, 0, fence_limit - 1);
        else if (name == "command")
            e.command = value;
        else
            continue;
        seen.insert(name);
    }
    // What the script and encode_entry always write; without it the entry is no run of ours.
    for (std::string_view name : {"end_ms", "start_ms", "outcome", "duration_ms", "pid", "fence"})
        if (!seen.contains(name)) throw DataError(fmt::format("ledger entry: no {} field", name));
    if (e.start_ms > e.end_ms)
        throw DataError(
            fmt::format("ledger entry: start_ms {} is after end_ms {}", e.start_ms, e.end_ms));
    return e;
}

}  // namespace redlock

// The pure part of the run ledger (ledger.hpp): an entry's stored form, read with every number
// checked against its domain, and how a quorum merges the copies of its nodes.
#include <fmt/format.h>

#include <sys/types.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "lock/ledger/bounds.hpp"
#include "lock/ledger/ledger.hpp"
#include "util/errors.hpp"
#include "util/excerpt.hpp"
#include "util/number.hpp"
#include "util/printable.hpp"

namespace redlock {
namespace {

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

std::string_view outcome_name(Outcome o) {
    switch (o) {
        case Outcome::ran:
            return "ran";
        case Outcome::busy:
            return "busy";
        case Outcome::skipped_slot:
            return "skipped-slot";
        case Outcome::lost:
            return "lost";
        case Outcome::timed_out:
            return "timed-out";
        case Outcome::stuck:
            return "stuck";
        case Outcome::failed_to_start:
            return "failed-to-start";
        case Outcome::killed:
            return "killed";
        case Outcome::abandoned:
            return "abandoned";
    }
    return "unknown";
}

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
        std::optional<long long> n = parse_integer(value, min, max);
        if (!n)
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

namespace {

// What a run sent, the same in every copy of its entry.
using RunId =
    std::tuple<std::string, long long, std::string, long long, long long, int, int, std::string>;

// An abandoned run sent nothing: each node wrote its copy from the run's holder record when it
// noticed the run's end, by its own clock (lock/scripts/lib/abandoned.lua), so the copies differ
// in their times and duration. They are one run by what the run wrote into each node's record:
// host, pid, user and the fence, the quorum's (raised on every node that counted for the
// acquire), which no other run of the lock ever had; duration -1, which no sent entry has, keeps
// them apart from any entry the run wrote itself. One node alone still adds no row: its copy is
// one of the majority of copies a row needs.
RunId run_id(const LedgerEntry& e) {
    return {e.host,
            e.pid,
            e.user,
            e.fence,
            e.outcome == "abandoned" ? -1 : e.duration_ms,
            e.exit_status.value_or(-1),
            e.signal.value_or(-1),
            e.command};
}

// One run from its copies (one per node, at least one): the outcome most copies give (between
// equals, the first node's), and the median of their times (the lower one of an even count).
LedgerEntry merged(const std::vector<const LedgerEntry*>& copies) {
    std::map<std::string, std::size_t> outcomes;
    for (const LedgerEntry* e : copies) ++outcomes[e->outcome];
    const LedgerEntry* chosen = copies.front();
    for (const LedgerEntry* e : copies)
        if (outcomes[e->outcome] > outcomes[chosen->outcome]) chosen = e;
    LedgerEntry out = *chosen;
    auto median = [&](long long LedgerEntry::*field) {
        std::vector<long long> v;
        for (const LedgerEntry* e : copies) v.push_back(e->*field);
        std::nth_element(v.begin(), v.begin() + static_cast<long>((v.size() - 1) / 2), v.end());
        return v[(v.size() - 1) / 2];
    };
    out.end_ms = median(&LedgerEntry::end_ms);
    out.start_ms = std::min(median(&LedgerEntry::start_ms), out.end_ms);
    // The copies of an abandoned run each measured a duration of their own (run_id).
    if (out.outcome == "abandoned") out.duration_ms = out.end_ms - out.start_ms;
    return out;
}

// The runs of `per_node` (each node's entries; a node counted once per run, however often it
// lists it) that at least `majority` nodes hold, merged.
template <typename EntriesOf>
std::vector<LedgerEntry> majority_runs(std::size_t nodes, const EntriesOf& entries_of,
                                       std::size_t majority) {
    std::map<RunId, std::vector<const LedgerEntry*>> copies;
    for (std::size_t i = 0; i < nodes; ++i) {
        std::set<RunId> here;
        for (const LedgerEntry* e : entries_of(i)) {
            RunId id = run_id(*e);
            if (here.insert(id).second) copies[id].push_back(e);
        }
    }
    std::vector<LedgerEntry> out;
    for (const auto& [id, same] : copies)
        if (same.size() >= std::max<std::size_t>(majority, 1)) out.push_back(merged(same));
    std::stable_sort(out.begin(), out.end(), [](const LedgerEntry& a, const LedgerEntry& b) {
        return a.end_ms > b.end_ms;
    });
    return out;
}

}  // namespace

bool same_run(const LedgerEntry& a, const LedgerEntry& b) {
    return run_id(a) == run_id(b);
}

LastRuns majority_last_runs(const std::vector<LastRuns>& per_node, std::size_t majority) {
    auto pick = [&](std::optional<LedgerEntry> LastRuns::*which) -> std::optional<LedgerEntry> {
        std::vector<LedgerEntry> runs = majority_runs(
            per_node.size(),
            [&](std::size_t i) {
                const std::optional<LedgerEntry>& e = per_node[i].*which;
                return e ? std::vector<const LedgerEntry*>{&*e} : std::vector<const LedgerEntry*>{};
            },
            majority);
        // Each node gives one entry, so a majority agrees on one run at most.
        if (runs.empty()) return std::nullopt;
        return runs.front();
    };
    return {pick(&LastRuns::last), pick(&LastRuns::last_success)};
}

std::vector<LedgerEntry> majority_history(const std::vector<std::vector<LedgerEntry>>& per_node,
                                          std::size_t majority, std::size_t limit) {
    std::vector<LedgerEntry> out = majority_runs(
        per_node.size(),
        [&](std::size_t i) {
            std::vector<const LedgerEntry*> v;
            for (const LedgerEntry& e : per_node[i]) v.push_back(&e);
            return v;
        },
        majority);
    if (out.size() > limit) out.resize(limit);
    return out;
}

}  // namespace redlock

#include "lock/ledger.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "lock/lock_replies.hpp"
#include "lock/permits.hpp"
#include "lock/scripts.hpp"
#include "lock/shared.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {
namespace {

void check_policy(const OncePer& p) {
    if (p.period < once_period_min || p.period > once_period_max)
        throw UsageError(
            fmt::format("--once-per must be between 1s and 366d, got {} ms", p.period.count()));
    if (p.offset < Millis(0) || p.offset >= p.period)
        throw UsageError("--slot-offset must be at least 0 and less than --once-per");
}

}  // namespace

long long slot_of(long long now_ms, const OncePer& p) {
    check_policy(p);
    if (now_ms < 0 || now_ms > max_time_ms)
        throw DataError(
            fmt::format("Redis reported the time {} ms, which is no real clock", now_ms));
    long long since = now_ms - p.offset.count();
    long long period = p.period.count();
    // Floor, not truncation: before the offset's first slot the slot is negative.
    long long q = since / period;
    if (since % period != 0 && since < 0) --q;
    return q;
}

bool slot_in_range(long long slot, const OncePer& p) {
    return slot >= slot_of(0, p) && slot <= slot_of(max_time_ms, p);
}

long long slot_start_ms(long long slot, const OncePer& p) {
    // A slot past a real clock's overflows the product (a year's period times a slot near
    // max_slot); LockNode::acquire refuses such replies, this keeps any other caller exact.
    if (!slot_in_range(slot, p))
        throw DataError(fmt::format("--once-per slot {} is of no real clock", slot));
    return slot * p.period.count() + p.offset.count();
}

Millis once_record_ttl(const OncePer& p) {
    return 3 * p.period;
}

namespace {

// The record's part of the scripts' ARGV (record_run in lib/ledger.lua): the record itself, and
// its field/value pairs, which go last.
struct RecordArgs {
    std::vector<std::string> record;
    std::vector<std::string> fields;
};

RecordArgs record_args(const RunRecord& record) {
    const LedgerEntry& e = record.entry;
    std::string mode = !record.slot ? "" : record.any_result ? "any" : "ok";
    RecordArgs out;
    out.record = {std::string(outcome_name(record.outcome)),
                  std::to_string(record.ledger_size),
                  encode_entry(e),
                  std::to_string(e.duration_ms),
                  mode,
                  std::to_string(record.slot.value_or(0)),
                  std::to_string(record.once_ttl.count())};
    out.fields = {"host",  e.host,
                  "pid",   std::to_string(e.pid),
                  "fence", std::to_string(e.fence),
                  "exit",  e.exit_status ? std::to_string(*e.exit_status) : std::string()};
    if (record.slot) {
        out.fields.push_back("start_ms");
        out.fields.push_back(std::to_string(record.slot_start_ms));
    }
    return out;
}

}  // namespace

std::vector<std::string> with_record_args(std::vector<std::string> args, const RunRecord& record) {
    if (!record.held)
        throw Error("a finish records only a run that held the lock", exit_code::internal);
    RecordArgs r = record_args(record);
    args.insert(args.end(), r.record.begin(), r.record.end());
    args.insert(args.end(), r.fields.begin(), r.fields.end());
    return args;
}

std::vector<std::string> ledger_script_args(const std::string& token, const RunRecord& record,
                                            const std::vector<std::string>& release) {
    RecordArgs r = record_args(record);
    std::vector<std::string> args{record.held ? token : std::string()};
    args.insert(args.end(), r.record.begin(), r.record.end());
    if (release.empty()) {
        args.insert(args.end(), {"", "", ""});
    } else {
        if (release.size() != 3 || !record.held)
            throw Error("ledger.lua releases only a run that held the lock, with 3 arguments",
                        exit_code::internal);
        args.insert(args.end(), release.begin(), release.end());
    }
    args.insert(args.end(), r.fields.begin(), r.fields.end());
    return args;
}

RecordResult write_record(Connection& conn, const LockKeys& keys, const std::string& token,
                          const RunRecord& record) {
    Reply reply =
        scripts::ledger().run(conn, {keys.key, keys.ledger, keys.once, keys.info, keys.wait},
                              ledger_script_args(token, record, {}), conn.timeouts().command);
    FinishResult out = finish_result(reply, keys.key, /*released=*/false);
    return out.record;
}

namespace {

// One stored entry, or none when it is out of range (decode_entry): left out with a warning, so
// that one bad entry neither hides the others nor passes for a run.
std::optional<LedgerEntry> checked_entry(std::string_view stored, std::string_view key) {
    try {
        return decode_entry(stored);
    } catch (const DataError& e) {
        log::warning("lock '{}': left out a ledger entry: {}", key, e.what());
        return std::nullopt;
    }
}

}  // namespace

// What the ledger readers (history.lua, last_runs.lua) look at besides the ledger to tell an
// abandoned run: the plain lock's holder record, and the permit and shared holders' records that
// the set of open runs names.
std::vector<std::string> last_runs_keys(const LockKeys& keys) {
    return {keys.ledger, keys.key, keys.info, keys.open, shared_holders_key(keys)};
}

std::vector<LedgerEntry> read_ledger(Connection& conn, const LockKeys& keys, std::size_t limit) {
    std::vector<LedgerEntry> out;
    if (limit == 0) return out;
    // A script rather than LRANGE: the runs that were abandoned and are not yet recorded come
    // first (lib/abandoned.lua), read in the same step as the ledger.
    Reply reply = scripts::history().run(conn, last_runs_keys(keys),
                                         {std::to_string(limit), permit_key_prefix(keys)},
                                         conn.timeouts().command);
    ReplyView r =
        check(reply, fmt::format("reading the ledger of lock '{}'", keys.key))
            .as_array(0, SIZE_MAX, [&] {
                return fmt::format("unexpected reply reading the ledger of lock '{}'", keys.key);
            });
    for (std::size_t i = 0; i < r.size() && i < limit; ++i)
        if (auto stored = r[i].string())
            if (auto e = checked_entry(*stored, keys.key)) out.push_back(std::move(*e));
    return out;
}

LastRuns last_runs_from_reply(const Reply& reply, std::string_view key) {
    ReplyView r =
        check(reply, fmt::format("reading the ledger of lock '{}'", key)).as_array(2, 2, [&] {
            return fmt::format(
                "unexpected reply reading the last runs of lock '{}' (is this Redis?)", key);
        });
    auto entry = [&](ReplyView e) -> std::optional<LedgerEntry> {
        std::optional<std::string_view> stored = e.string();
        if (!stored) return std::nullopt;  // false: none
        return checked_entry(*stored, key);
    };
    return {entry(r[0]), entry(r[1])};
}

std::vector<std::string> last_runs_args(const LockKeys& keys) {
    return {permit_key_prefix(keys)};
}

LastRuns read_last_runs(Connection& conn, const LockKeys& keys) {
    Reply reply = scripts::last_runs().run(conn, last_runs_keys(keys), {permit_key_prefix(keys)},
                                           conn.timeouts().command);
    return last_runs_from_reply(reply, keys.key);
}

LastRuns last_runs_or_none(const Reply& reply, const LockKeys& keys) {
    try {
        return last_runs_from_reply(reply, keys.key);
    } catch (const Error& e) {
        log::verbose("could not read the ledger of lock '{}': {}", keys.key, e.what());
        return {};
    }
}

LastRuns last_runs_or_none(Connection& conn, const LockKeys& keys) {
    try {
        return read_last_runs(conn, keys);
    } catch (const Error& e) {
        log::verbose("could not read the ledger of lock '{}': {}", keys.key, e.what());
        return {};
    }
}

}  // namespace redlock

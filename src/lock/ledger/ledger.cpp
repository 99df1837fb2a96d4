#include "lock/ledger/ledger.hpp"

#include <fmt/format.h>

#include "util/errors.hpp"

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

}  // namespace redlock

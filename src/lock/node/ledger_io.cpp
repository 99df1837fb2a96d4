#include "lock/node/ledger_io.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "lock/node/lock_replies.hpp"
#include "lock/node/permits.hpp"
#include "lock/node/scripts.hpp"
#include "lock/node/shared.hpp"
#include "util/errors.hpp"
#include "util/log.hpp"

namespace redlock {

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

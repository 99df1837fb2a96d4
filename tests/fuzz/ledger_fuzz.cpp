// libFuzzer target: any bytes as a stored run ledger entry (a server's, or any writer's of the
// key), through decode_entry and, when it accepts them, through what history and status make of
// the entry: its duration and end time as text, its JSON, and a quorum's merge of its copies.
// decode_entry must give an entry whose every number lies in its documented range, or throw
// DataError with a short message; anything else (a crash, a hang, an abort here) is a bug.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "inspect/lock_report.hpp"
#include "lock/ledger/ledger.hpp"
#include "lock/node/lock_replies.hpp"
#include "util/duration.hpp"
#include "util/errors.hpp"
#include "util/json.hpp"
#include "util/printable.hpp"

using namespace redlock;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

bool in(long long v, long long min, long long max) {
    return v >= min && v <= max;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view stored(reinterpret_cast<const char*>(data), size);
    LedgerEntry e;
    try {
        e = decode_entry(stored);
    } catch (const DataError& err) {
        // The message quotes the bad value shortened, whatever its size.
        check(std::string_view(err.what()).size() <= 300);
        return 0;
    }
    check(in(e.end_ms, min_entry_time_ms, max_time_ms - 1));
    check(in(e.start_ms, min_entry_time_ms, e.end_ms));
    check(in(e.duration_ms, 0, max_time_ms - min_entry_time_ms));
    check(in(e.pid, 1, 2'147'483'647));
    check(in(e.fence, 0, fence_limit - 1));
    check(!e.exit_status || in(*e.exit_status, 0, 255));
    check(!e.signal || in(*e.signal, 1, 127));

    // What history and status show of it.
    (void)format_duration(Millis(e.duration_ms));
    (void)local_time_text(e.end_ms);
    (void)local_time_text(e.start_ms);
    for (const std::string* s : {&e.outcome, &e.host, &e.user, &e.command})
        check(is_printable(printable(*s)));
    JsonWriter json;
    write_entry_json(json, e);

    // Three nodes, two of which hold it (one twice): a majority, so it is shown, once.
    std::vector<LedgerEntry> merged = majority_history({{e}, {e, e}, {}}, 2, 10);
    check(merged.size() == 1 && same_run(merged[0], e) && merged[0].end_ms == e.end_ms);
    check(majority_history({{e, e}, {}, {}}, 2, 10).empty());

    // What a run writes of it reads back as the same run (the script writes the outcome as is,
    // so only one without the separators).
    if (e.outcome.find_first_of("\t\n\\") == std::string::npos) {
        std::string again = "end_ms=" + std::to_string(e.end_ms) +
                            "\tstart_ms=" + std::to_string(e.start_ms) + "\toutcome=" + e.outcome +
                            "\t" + encode_entry(e);
        LedgerEntry d = decode_entry(again);
        check(same_run(d, e) && d.end_ms == e.end_ms && d.start_ms == e.start_ms &&
              d.outcome == e.outcome);
    }
    return 0;
}

#include "lock/busy_text.hpp"

#include <fmt/format.h>

#include "lock/node/holder.hpp"
#include "lock/quorum/quorum_math.hpp"
#include "util/duration.hpp"

namespace redlock {
namespace {

// "; the first ends in 17s": the holder's TTL, when the node told it.
std::string ends_in(const std::optional<AcquireResult>& busy, const char* what) {
    if (!busy || busy->holder_pttl < 0) return {};
    return fmt::format("; {} {}", what, format_duration(Millis(busy->holder_pttl)));
}

}  // namespace

std::string busy_text(const LockKeys& keys, int permits, bool shared,
                      const std::optional<AcquireResult>& busy,
                      const std::optional<NodeTally>& tally) {
    if (permits > 1) {
        std::string head = fmt::format(
            "all {} permits of lock '{}' are held or promised to waiting runs", permits, keys.key);
        if (!tally) return head + ends_in(busy, "the first ends in");
        return fmt::format(
            "{}: no permit was given to this run by a majority ({} of {} nodes at "
            "most, {} answered, {} needed)",
            head, tally->accepted, tally->nodes, tally->answered, majority(tally->nodes));
    }
    if (shared) {
        // A shared run queues behind a waiting exclusive run (writer preference), so both keep
        // it out.
        std::string head = fmt::format(
            "lock '{}' is held by an exclusive holder, or an exclusive run waits for it ahead of "
            "shared ones",
            keys.key);
        if (!tally) return head + ends_in(busy, "that expires in");
        return fmt::format("{}: only {} of {} nodes let this run in ({} answered, {} needed)", head,
                           tally->accepted, tally->nodes, tally->answered, majority(tally->nodes));
    }
    if (!tally)
        return fmt::format("lock '{}' is held by {}", keys.key,
                           busy ? describe_holder(*busy) : describe_holder(AcquireResult{}));
    std::string holder = busy ? fmt::format(", held by {}", describe_holder(*busy)) : "";
    return fmt::format(
        "lock '{}' is held elsewhere: only {} of {} nodes accepted it ({} answered, {} needed){}",
        keys.key, tally->accepted, tally->nodes, tally->answered, majority(tally->nodes), holder);
}

}  // namespace redlock

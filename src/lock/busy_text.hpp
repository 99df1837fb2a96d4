// What a run that did not get the lock says about who has it, for a single node and a quorum
// alike: the three modes' texts are written here once.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "lock/node/keys.hpp"
#include "lock/node/lock.hpp"

namespace redlock {

// A quorum attempt's count of the nodes: how many accepted, of how many, and how many answered.
struct NodeTally {
    std::size_t accepted = 0, nodes = 0, answered = 0;
};

// "lock 'k' is held by <holder>" (a single node), or "lock 'k' is held elsewhere: only 2 of 5
// nodes accepted it (5 answered, 3 needed), held by <holder>" (a quorum, `tally`); with --permits
// N "all N permits of lock 'k' are held or promised to waiting runs", with --shared "lock 'k' is
// held by an exclusive holder, or an exclusive run waits for it ahead of shared ones", each
// followed by when the way may clear (one node) or by the tally (a quorum). `busy` is a busy
// node's reply, if any. The run is giving up when it says this, so it never says it looks again.
std::string busy_text(const LockKeys& keys, int permits, bool shared,
                      const std::optional<AcquireResult>& busy,
                      const std::optional<NodeTally>& tally = std::nullopt);

}  // namespace redlock

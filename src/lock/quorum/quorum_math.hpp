// The arithmetic of the Redlock algorithm (redis.io "Distributed Locks with Redis"): how many
// nodes make a majority, the clock-drift allowance, and how long a quorum lock is valid. Pure
// functions, so the safety margins can be tested without any server.
#pragma once

#include <cstddef>
#include <optional>

#include "util/clock.hpp"

namespace redlock {

// N/2+1: any two sets this large share a node, which is what makes both mutual exclusion and the
// fence's monotonicity hold across the quorum.
std::size_t majority(std::size_t nodes);

// The Redlock spec's allowance for clocks running at different rates on this host and the nodes:
// 1% of the ttl plus 2ms.
Millis clock_drift(Millis ttl);

// How long a lock taken (or extended) on a majority is still ours, counted from when the attempt
// started: ttl - elapsed - drift. nullopt when nothing is left: the attempt took too long to prove
// anything, and must count as failed.
std::optional<Millis> quorum_validity(Millis ttl, Millis elapsed);

// Whether `accepted` nodes out of `nodes`, after `elapsed`, hold the lock.
bool quorum_holds(std::size_t accepted, std::size_t nodes, Millis ttl, Millis elapsed);

// The fence handed out after an acquire on a majority that returned `max_counter` as the highest
// of their counters: one above it, so it is above every fence any earlier holder was given.
// `max_counter` is below fence_limit - 1 (QuorumLock::acquire refuses more), so this cannot
// overflow.
long long quorum_fence(long long max_counter);

}  // namespace redlock

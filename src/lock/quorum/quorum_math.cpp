#include "lock/quorum/quorum_math.hpp"

namespace redlock {

std::size_t majority(std::size_t nodes) {
    return nodes / 2 + 1;
}

Millis clock_drift(Millis ttl) {
    return ttl / 100 + Millis(2);
}

std::optional<Millis> quorum_validity(Millis ttl, Millis elapsed) {
    Millis left = ttl - elapsed - clock_drift(ttl);
    if (left <= Millis(0)) return std::nullopt;
    return left;
}

bool quorum_holds(std::size_t accepted, std::size_t nodes, Millis ttl, Millis elapsed) {
    return nodes > 0 && accepted >= majority(nodes) && quorum_validity(ttl, elapsed).has_value();
}

long long quorum_fence(long long max_counter) {
    return max_counter + 1;
}

}  // namespace redlock

#include "lock/renewable.hpp"

namespace redlock {

Millis lease_margin(Millis ttl) {
    return ttl / 100 + Millis(10);
}

// Redis started the TTL no earlier than `sent`, so counting from it errs on the safe side.
Deadline SingleNodeLease::lease_end(Deadline sent, Millis ttl) const {
    return sent + ttl - lease_margin(ttl);
}

}  // namespace redlock

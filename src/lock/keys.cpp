#include "lock/keys.hpp"

#include <fmt/format.h>

#include "redis/cluster_slots.hpp"

namespace redlock {
std::string companion_key(std::string_view key, std::string_view suffix) {
    if (hashed_part(key).size() != key.size()) return fmt::format("{}:{}", key, suffix);
    if (key.find('}') == std::string_view::npos) return fmt::format("{{{}}}:{}", key, suffix);
    // The key hashes whole but cannot sit inside braces; find a short tag with the same slot.
    // One exists among the first few tens of thousands of candidates for every slot.
    unsigned slot = hash_slot(key);
    for (unsigned n = 0;; ++n) {
        std::string tag = fmt::format("redlock-{}", n);
        if (hash_slot(tag) == slot) return fmt::format("{{{}}}{}:{}", tag, key, suffix);
    }
}

LockKeys LockKeys::make(std::string_view name, std::string_view prefix) {
    LockKeys k;
    k.name = std::string(name);
    k.key = fmt::format("{}{}", prefix, name);
    k.fence = companion_key(k.key, "fence");
    k.info = companion_key(k.key, "info");
    k.wait = companion_key(k.key, "wait");
    // companion_key(key, "wake:" + t) == companion_key(key, "wake:") + t for every key shape,
    // which is what lets the release script name the list of the waiter it pops.
    k.wake = companion_key(k.key, "wake:");
    k.ledger = companion_key(k.key, "ledger");
    k.once = companion_key(k.key, "once");
    return k;
}

}  // namespace redlock

#include "lock/node/keys.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdint>

#include "redis/cluster_slots.hpp"

namespace redlock {
namespace {

// "redlock-N" for the smallest N whose slot is `slot`. The table of all 16384 is built once, on
// first use, by counting N up until every slot has one (141,574 candidates: a few milliseconds,
// 64 KiB), so each key costs one lookup instead of a search per key.
std::string slot_tag(unsigned slot) {
    static const std::array<std::uint32_t, cluster_slots> first_n = [] {
        std::array<std::uint32_t, cluster_slots> table{};
        std::array<bool, cluster_slots> found{};
        unsigned missing = cluster_slots;
        for (std::uint32_t n = 0; missing > 0; ++n) {
            unsigned s = hash_slot(fmt::format("redlock-{}", n));
            if (!found[s]) {
                found[s] = true;
                table[s] = n;
                --missing;
            }
        }
        return table;
    }();
    return fmt::format("redlock-{}", first_n[slot % cluster_slots]);
}

}  // namespace

// Two forms, told apart by what follows the first '}':
//   key without '}':  "{" key "}:" suffix           (plain names: "{job}:fence")
//   key with a '}':   "{" tag "}" key ":" suffix    (tag: the key's own hash tag, else
//                                                    slot_tag() of its slot)
// Both start with '{' and a run without '}' (key, or tag), so the first '}' ends it. In the
// first form the next character is ':'; in the second it is the key, which contains a '}', so
// a second-form companion ending in a suffix without '}' can never read as the first form.
// Within a form the key is read back (the part between the braces; the rest after the first
// '}' up to ":" suffix), so distinct (key, suffix) pairs give distinct companions: the mapping
// is injective. The slot is the key's: the first form's hash tag is the whole key, which has no
// usable tag of its own (it has no '}'); the second form's tag is the key's tag or hashes to the
// key's slot. O(length of the key), one table lookup at most.
std::string companion_key(std::string_view key, std::string_view suffix) {
    if (key.find('}') == std::string_view::npos) return fmt::format("{{{}}}:{}", key, suffix);
    std::string_view tag = hashed_part(key);
    if (tag.size() != key.size()) return fmt::format("{{{}}}{}:{}", tag, key, suffix);
    return fmt::format("{{{}}}{}:{}", slot_tag(hash_slot(key)), key, suffix);
}

std::optional<std::string_view> lock_key_of(std::string_view companion, std::string_view suffix) {
    std::string tail = fmt::format(":{}", suffix);
    if (!companion.starts_with('{') || !companion.ends_with(tail)) return std::nullopt;
    std::string_view base = companion.substr(0, companion.size() - tail.size());
    auto close = base.find('}');
    if (close == std::string_view::npos) return std::nullopt;
    // "{key}" (the whole base), else "{tag}key".
    std::string_view key =
        close + 1 == base.size() ? base.substr(1, close - 1) : base.substr(close + 1);
    if (key.empty() || companion_key(key, suffix) != companion) return std::nullopt;
    return key;
}

std::optional<CompanionOf> companion_of(std::string_view key) {
    // Every companion starts with '{' (both forms of companion_key); most names end here.
    if (!key.starts_with('{')) return std::nullopt;
    // The suffixes a lock uses: whole, or a family followed by a token, a permit's number and
    // the like (companion_key(k, "wake:" + t) == companion_key(k, "wake:") + t).
    constexpr std::string_view whole[] = {"fence", "info",   "wait", "ledger",
                                          "once",  "shared", "open"};
    constexpr std::string_view family[] = {"wake:", "shared:", "permit:"};
    // Each ':' may start the suffix; lock_key_of proves a candidate by rebuilding the companion.
    for (std::size_t colon = key.find(':'); colon != std::string_view::npos;
         colon = key.find(':', colon + 1)) {
        std::string_view suffix = key.substr(colon + 1);
        bool used = false;
        for (std::string_view w : whole) used = used || suffix == w;
        for (std::string_view f : family) used = used || suffix.starts_with(f);
        if (!used) continue;
        if (std::optional<std::string_view> lock = lock_key_of(key, suffix))
            return CompanionOf{*lock, suffix};
    }
    return std::nullopt;
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
    k.open = companion_key(k.key, "open");
    return k;
}

}  // namespace redlock

#include "keys.hpp"

#include <fmt/format.h>

#include <cstdint>

namespace redlock {
namespace {

std::uint16_t crc16(std::string_view data) {
    std::uint16_t crc = 0;
    for (unsigned char byte : data) {
        crc ^= static_cast<std::uint16_t>(byte << 8);
        for (int i = 0; i < 8; ++i)
            crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                                 : static_cast<std::uint16_t>(crc << 1);
    }
    return crc;
}

// The part of the key Redis Cluster hashes: the first non-empty {...}, else the whole key.
std::string_view hashed_part(std::string_view key) {
    auto open = key.find('{');
    if (open == std::string_view::npos) return key;
    auto close = key.find('}', open + 1);
    if (close == std::string_view::npos || close == open + 1) return key;
    return key.substr(open + 1, close - open - 1);
}

}  // namespace

unsigned hash_slot(std::string_view key) {
    return crc16(hashed_part(key)) % 16384;
}

std::string companion_key(std::string_view key, std::string_view suffix) {
    if (hashed_part(key).size() != key.size()) return fmt::format("{}:{}", key, suffix);
    if (key.find('}') == std::string_view::npos) return fmt::format("{{{}}}:{}", key, suffix);
    // The key hashes whole but cannot sit inside braces; find a short tag with the same slot.
    // One exists among the first few tens of thousands of candidates for every slot.
    unsigned slot = hash_slot(key);
    for (unsigned n = 0;; ++n) {
        std::string tag = fmt::format("redlock-{}", n);
        if (crc16(tag) % 16384 == slot) return fmt::format("{{{}}}{}:{}", tag, key, suffix);
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
    return k;
}

}  // namespace redlock

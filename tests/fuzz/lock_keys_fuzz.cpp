// libFuzzer target: key derivation on any bytes (the part before the first NUL is the prefix,
// the rest the lock name). Every companion key lies in the lock key's slot, differs from it, ends
// in its suffix, and leads back to the key through lock_key_of; two different keys never share a
// companion (the properties tests/unit/lock/keys_test.cpp checks on examples).
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "lock/node/keys.hpp"
#include "redis/cluster_slots.hpp"

using namespace redlock;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view input(reinterpret_cast<const char*>(data), size);
    auto nul = input.find('\0');
    std::string_view prefix =
        nul == std::string_view::npos ? std::string_view() : input.substr(0, nul);
    std::string_view name = nul == std::string_view::npos ? input : input.substr(nul + 1);

    if (name.empty()) return 0;  // the CLI refuses an empty NAME ("{}:fence" is not in ""'s slot)
    LockKeys k = LockKeys::make(name, prefix);
    if (k.key != std::string(prefix) + std::string(name)) std::abort();
    const std::string token = "0123456789abcdef0123456789abcdef";
    unsigned slot = hash_slot(k.key);
    for (const std::string* c : {&k.fence, &k.info, &k.wait, &k.ledger, &k.once, &k.open})
        if (hash_slot(*c) != slot || *c == k.key) std::abort();
    if (k.wake_key(token) != companion_key(k.key, "wake:" + token)) std::abort();
    if (hash_slot(k.wake_key(token)) != slot) std::abort();
    for (std::string_view suffix : {"fence", "info", "wait", "ledger", "once", "open"}) {
        std::string c = companion_key(k.key, suffix);
        // Not ":" + std::string(suffix): GCC 12 at -O3 warns (-Wrestrict) on that, falsely.
        if (c.size() <= suffix.size() || !c.ends_with(suffix) ||
            c[c.size() - suffix.size() - 1] != ':')
            std::abort();
        if (lock_key_of(c, suffix) != std::string_view(k.key)) std::abort();
    }
    // Two keys from one input: the name alone and prefix + name.
    if (k.key != name && companion_key(k.key, "fence") == companion_key(name, "fence"))
        std::abort();
    return 0;
}

// What a run accepts as a lock name: Redis takes any bytes as a key, but a name that is empty,
// huge or full of control characters is a mistake in a script, not a lock anyone means to take.
#pragma once

#include <cstddef>
#include <string_view>

namespace redlock {

// Far above any real name, and small enough that every message quoting the key stays readable.
inline constexpr std::size_t max_key_bytes = 1024;

// Throws UsageError (naming the problem, never quoting a huge name whole) when `prefix` + `name`
// is not a key a run should lock.
// `prefix_label` names where the prefix came from ("--prefix", or "REDLOCK_PREFIX").
void check_lock_name(std::string_view name, std::string_view prefix,
                     std::string_view prefix_label = "--prefix");

}  // namespace redlock

// Human durations on the command line: "250ms", "30s", "1.5s", "5m", "1h30m"; a bare number
// ("0.5") is seconds.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

namespace redlock {

// Parses a strictly positive duration. Throws UsageError naming `what` (e.g. "--ttl") on zero,
// negative, overflowing (beyond ten years), sub-millisecond or malformed input.
std::chrono::milliseconds parse_duration(std::string_view text, std::string_view what);

// "12m3s", "250ms", "1h0m5s", "1h30m", "9600h": the inverse of parse_duration (milliseconds
// are left out from a minute on), used in messages.
std::string format_duration(std::chrono::milliseconds d);

}  // namespace redlock

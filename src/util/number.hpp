// The one parser of a decimal integer from a server or a user: all of `text`, an optional '-'
// and digits, nothing else (no sign '+', no space, no "0x"), within [min, max]. Every caller names
// the range its number may take, where it is parsed, so no wild value reaches arithmetic.
#pragma once

#include <charconv>
#include <climits>
#include <optional>
#include <string_view>

namespace redlock {

inline std::optional<long long> parse_integer(std::string_view text, long long min, long long max) {
    long long v = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    if (v < min || v > max) return std::nullopt;
    return v;
}

}  // namespace redlock

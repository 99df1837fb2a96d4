// UTF-8 validation for text that comes from Redis keys and values, which are arbitrary bytes.
#pragma once

#include <cstddef>
#include <string_view>

namespace redlock {

// Length of the valid UTF-8 sequence starting at s[i] (1 for ASCII), or 0 when s[i] does not
// start one. Overlong forms, surrogates (U+D800-U+DFFF) and code points above U+10FFFF are invalid.
std::size_t utf8_sequence(std::string_view s, std::size_t i);

}  // namespace redlock

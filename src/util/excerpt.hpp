// Quoting input of any size in a message: a 100 KB URL or duration must still give a short
// line that names the problem.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace redlock {

// `s` itself when it has at most `limit` bytes, else its first bytes (never half a UTF-8
// sequence) followed by "...(N bytes)".
std::string excerpt(std::string_view s, std::size_t limit = 80);

}  // namespace redlock

// Terminal-safe text for the operator commands' human output. Lock names, hosts and commands come
// from Redis as arbitrary bytes; printed raw, a newline would forge a line in `list` and an escape
// sequence would drive the operator's terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace redlock {

// `s` with printable UTF-8 (including non-ASCII letters) kept as is, and everything else escaped:
// "\\" for a backslash (so the escapes are unambiguous), "\n", "\r", "\t", and "\xNN" for any
// other control character (C0, DEL, C1) and for each byte that is not valid UTF-8.
std::string printable(std::string_view s);

// Whether `s` is valid UTF-8 without a control character (C0, DEL, C1): printable() would change
// nothing but its backslashes.
bool is_printable(std::string_view s);

// Columns `text` (already printable) takes on a terminal: one per code point. East Asian wide
// characters take two in most terminals; list's alignment is off by that much for them.
std::size_t display_width(std::string_view text);

}  // namespace redlock

#include "util/excerpt.hpp"

#include <fmt/format.h>

namespace redlock {

std::string excerpt(std::string_view s, std::size_t limit) {
    if (s.size() <= limit) return std::string(s);
    std::size_t cut = limit;
    // Back up over continuation bytes (10xxxxxx) so that no character is split.
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
    return fmt::format("{}...({} bytes)", s.substr(0, cut), s.size());
}

}  // namespace redlock

#include "util/printable.hpp"

#include <fmt/format.h>

#include "util/utf8.hpp"

namespace redlock {

std::string printable(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) {
        unsigned char c = static_cast<unsigned char>(s[i]);
        std::size_t len = utf8_sequence(s, i);
        // U+0080-U+009F (C1 controls) are encoded as C2 80 - C2 9F.
        bool c1_control = len == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0;
        if (len > 1 && !c1_control) {
            out.append(s.substr(i, len));
            i += len;
            continue;
        }
        if (len == 0) len = 1;  // an invalid byte: escape it alone and resynchronise after it
        for (std::size_t k = 0; k < len; ++k, ++i) {
            c = static_cast<unsigned char>(s[i]);
            switch (c) {
                case '\\':
                    out += "\\\\";
                    break;
                case '\n':
                    out += "\\n";
                    break;
                case '\r':
                    out += "\\r";
                    break;
                case '\t':
                    out += "\\t";
                    break;
                default:
                    if (c < 0x20 || c >= 0x7F)
                        out += fmt::format("\\x{:02x}", c);
                    else
                        out += static_cast<char>(c);
            }
        }
    }
    return out;
}

bool is_printable(std::string_view s) {
    for (std::size_t i = 0; i < s.size();) {
        auto c = static_cast<unsigned char>(s[i]);
        std::size_t len = utf8_sequence(s, i);
        if (len == 0) return false;
        if (len == 1 && (c < 0x20 || c == 0x7f)) return false;
        if (len == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) return false;
        i += len;
    }
    return true;
}

std::size_t display_width(std::string_view text) {
    std::size_t width = 0;
    for (unsigned char c : text)
        if ((c & 0xC0) != 0x80) ++width;  // count lead bytes, not continuation bytes
    return width;
}

}  // namespace redlock

// libFuzzer target: the line log::emit writes for any message bytes. It is one line starting
// "redlock-run: ", with no control character (C0, DEL, C1 raw or UTF-8 encoded) that could forge
// a second message or drive a terminal, and of bounded length whatever the message's size.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "util/log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view message(reinterpret_cast<const char*>(data), size);
    std::string line = redlock::log::stderr_line(message);
    if (!line.starts_with("redlock-run: ")) std::abort();
    if (line.size() > 13 + 4096 + 32) std::abort();
    for (std::size_t i = 0; i < line.size(); ++i) {
        auto c = static_cast<unsigned char>(line[i]);
        if (c < 0x20 || c == 0x7f) std::abort();
        if (c >= 0x80 && c < 0xa0) {
            // Allowed only as a UTF-8 continuation byte of a character other than U+0080-U+009F.
            if (i == 0 || static_cast<unsigned char>(line[i - 1]) == 0xc2) std::abort();
            if ((static_cast<unsigned char>(line[i - 1]) & 0x80) == 0) std::abort();
        }
    }
    return 0;
}

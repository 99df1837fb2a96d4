#include "lock/node/token.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <system_error>

namespace redlock {

std::string new_token() {
    std::uint8_t bytes[16];
    std::size_t got = 0;
    while (got < sizeof bytes) {
        ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            throw std::system_error(errno, std::generic_category(), "getrandom");
        }
        got += static_cast<std::size_t>(n);
    }
    static constexpr char digits[] = "0123456789abcdef";
    std::string hex;
    hex.reserve(2 * sizeof bytes);
    for (std::uint8_t b : bytes) {
        hex += digits[b >> 4];
        hex += digits[b & 0xf];
    }
    return hex;
}

}  // namespace redlock

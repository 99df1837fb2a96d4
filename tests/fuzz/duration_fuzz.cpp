// libFuzzer target: parse_duration on any bytes. It must return a positive duration of at most
// ten years or throw UsageError with a short message; nothing else (tests/fuzz/run).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "util/duration.hpp"
#include "util/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        auto d = redlock::parse_duration(text, "--fuzz");
        constexpr long long ten_years = 3650LL * 86'400'000;
        if (d.count() <= 0 || d.count() > ten_years) std::abort();
        (void)redlock::format_duration(d);
    } catch (const redlock::UsageError& e) {
        // The message quotes the input shortened, whatever its size.
        if (std::string_view(e.what()).size() > 300) std::abort();
    }
    return 0;
}

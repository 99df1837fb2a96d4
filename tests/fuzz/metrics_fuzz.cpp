// libFuzzer target: the metrics file's reader, over any bytes found at --metrics-file. What it
// reads back and writes again is valid UTF-8, one sample or comment per line, with no series
// twice (node_exporter rejects the whole file otherwise), and stable after one round trip.
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "run/metrics.hpp"
#include "util/utf8.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    redlock::MetricsFile read = redlock::parse_metrics(text);
    std::string written = redlock::format_metrics(read);
    for (std::size_t i = 0; i < written.size();) {
        std::size_t len = redlock::utf8_sequence(written, i);
        if (len == 0 || written[i] == '\r') std::abort();
        i += len;
    }
    std::set<std::string_view> series;
    std::string_view rest = written;
    while (!rest.empty()) {
        std::size_t nl = rest.find('\n');
        if (nl == std::string_view::npos) std::abort();  // every line ends
        std::string_view line = rest.substr(0, nl);
        rest.remove_prefix(nl + 1);
        if (line.starts_with("# ")) continue;
        if (!line.starts_with("redlock_run_")) std::abort();
        if (!series.insert(line.substr(0, line.rfind(' '))).second) std::abort();
    }
    redlock::MetricsFile again = redlock::parse_metrics(written);
    if (redlock::format_metrics(again) !=
        redlock::format_metrics(redlock::parse_metrics(redlock::format_metrics(again))))
        std::abort();
    if (again.size() != read.size()) std::abort();
    return 0;
}

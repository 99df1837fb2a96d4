#include "util/duration.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <limits>

#include "util/errors.hpp"
#include "util/excerpt.hpp"

namespace redlock {
namespace {

// Ten years: far beyond any sensible TTL or wait, and far inside what the nanosecond deadline
// arithmetic (about 292 years from boot) can hold.
constexpr std::int64_t max_millis = 3650LL * 86'400'000;

std::int64_t unit_millis(std::string_view unit) {
    if (unit == "ms") return 1;
    if (unit == "s" || unit.empty()) return 1000;
    if (unit == "m") return 60'000;
    if (unit == "h") return 3'600'000;
    if (unit == "d") return 86'400'000;
    return 0;
}

}  // namespace

std::chrono::milliseconds parse_duration(std::string_view text, std::string_view what) {
    auto bad = [&](std::string_view why) {
        return UsageError(
            fmt::format("invalid duration '{}' for {}: {}", excerpt(text), what, why));
    };
    if (text.empty()) throw bad("empty");
    std::int64_t total = 0;
    std::size_t i = 0;
    auto is_digit = [&](std::size_t at) { return text[at] >= '0' && text[at] <= '9'; };
    while (i < text.size()) {
        if (text[i] == '-') throw bad("must be positive");
        if (!is_digit(i)) throw bad("expected a number like 250ms, 1.5s, 5m, 1h30m");
        std::size_t number_start = i;
        std::int64_t value = 0;
        for (; i < text.size() && is_digit(i); ++i) {
            if (value > (max_millis - (text[i] - '0')) / 10) throw bad("too large");
            value = value * 10 + (text[i] - '0');
        }
        // A fraction, as flock -w and timeout take it: "0.5", "1.5s", "2.25m".
        std::int64_t fraction = 0, fraction_scale = 1;
        if (i < text.size() && text[i] == '.') {
            ++i;
            if (i >= text.size() || !is_digit(i)) throw bad("expected digits after '.'");
            for (; i < text.size() && is_digit(i); ++i) {
                // Nine digits are below a nanosecond of a day: more is noise, not precision.
                if (fraction_scale == 1'000'000'000) throw bad("too many decimals");
                fraction = fraction * 10 + (text[i] - '0');
                fraction_scale *= 10;
            }
        }
        std::size_t unit_start = i;
        while (i < text.size() && !is_digit(i) && text[i] != '.') ++i;
        std::string_view unit = text.substr(unit_start, i - unit_start);
        // Only a lone number may omit its unit: "1h30" is more likely a typo than 1h30s.
        if (unit.empty() && number_start != 0) throw bad("missing unit");
        if (unit.empty() && i < text.size()) throw bad("missing unit");
        std::int64_t scale = unit_millis(unit);
        if (scale == 0)
            throw bad(fmt::format("unknown unit '{}' (use ms, s, m, h, d)", excerpt(unit, 20)));
        if (value > (max_millis - total) / scale) throw bad("too large");
        total += value * scale;
        if (fraction != 0) {
            // fraction < fraction_scale <= 1e9 and scale <= 86'400'000: the product fits.
            std::int64_t part = fraction * scale;
            if (part % fraction_scale != 0) throw bad("finer than a millisecond");
            if (part / fraction_scale > max_millis - total) throw bad("too large");
            total += part / fraction_scale;
        }
    }
    if (total <= 0) throw bad("must be greater than zero");
    return std::chrono::milliseconds(total);
}

std::string format_duration(std::chrono::milliseconds d) {
    std::int64_t ms = d.count();
    // The magnitude in unsigned arithmetic: the negation of the minimum int64 does not fit an
    // int64 (a ledger entry from a server can hold any), and every int64 must format.
    std::uint64_t magnitude =
        ms < 0 ? 0 - static_cast<std::uint64_t>(ms) : static_cast<std::uint64_t>(ms);
    // fmt rather than "-" + ...: GCC 12 at -O3 warns (-Wrestrict) about the inlined operator+.
    std::string_view sign = ms < 0 ? "-" : "";
    if (magnitude < 1000) return fmt::format("{}{}ms", sign, magnitude);
    std::uint64_t s = magnitude / 1000;
    std::uint64_t h = s / 3600, m = (s / 60) % 60, sec = s % 60;
    std::uint64_t frac = magnitude % 1000;
    if (h == 0 && m == 0 && frac != 0) return fmt::format("{}{}.{:03}s", sign, sec, frac);
    std::string out(sign);
    // As a user writes it: no zero units at the end ("1h", "1h30m", "9600h", not "9600h0m0s"),
    // but one between two others stays ("1h0m5s").
    if (h > 0) out += fmt::format("{}h", h);
    if (m > 0 || (h > 0 && sec > 0)) out += fmt::format("{}m", m);
    if (sec > 0 || (h == 0 && m == 0)) out += fmt::format("{}s", sec);
    return out;
}

}  // namespace redlock

// The one integer parser (util/number.hpp): the whole text, decimal, within long long.
#include "util/number.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

TEST(ParseInteger, TakesTheWholeTextAsADecimalOrNothing) {
    EXPECT_EQ(redlock::parse_integer("0"), 0);
    EXPECT_EQ(redlock::parse_integer("-42"), -42);
    EXPECT_EQ(redlock::parse_integer("9223372036854775807"), INT64_MAX);
    EXPECT_EQ(redlock::parse_integer("-9223372036854775808"), INT64_MIN);
    for (const char* bad : {"", "+1", " 1", "1 ", "0x10", "1e3", "9223372036854775808", "-", "1.0"})
        EXPECT_EQ(redlock::parse_integer(bad), std::nullopt) << bad;
}

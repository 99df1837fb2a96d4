// The one integer parser (util/number.hpp): the whole text, decimal, within the caller's range.
#include "util/number.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

using redlock::parse_integer;

TEST(ParseInteger, TakesTheWholeTextAsADecimalOrNothing) {
    EXPECT_EQ(parse_integer("0", INT64_MIN, INT64_MAX), 0);
    EXPECT_EQ(parse_integer("-42", INT64_MIN, INT64_MAX), -42);
    EXPECT_EQ(parse_integer("9223372036854775807", INT64_MIN, INT64_MAX), INT64_MAX);
    EXPECT_EQ(parse_integer("-9223372036854775808", INT64_MIN, INT64_MAX), INT64_MIN);
    for (const char* bad : {"", "+1", " 1", "1 ", "0x10", "1e3", "9223372036854775808", "-", "1.0"})
        EXPECT_EQ(parse_integer(bad, INT64_MIN, INT64_MAX), std::nullopt) << bad;
}

TEST(ParseInteger, RefusesANumberOutsideTheCallersRange) {
    EXPECT_EQ(parse_integer("5", 5, 10), 5);
    EXPECT_EQ(parse_integer("10", 5, 10), 10);
    EXPECT_EQ(parse_integer("4", 5, 10), std::nullopt);
    EXPECT_EQ(parse_integer("11", 5, 10), std::nullopt);
    EXPECT_EQ(parse_integer("-1", 0, INT64_MAX), std::nullopt);
}

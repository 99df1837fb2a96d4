#include "util/duration.hpp"

#include <gtest/gtest.h>

#include "util/errors.hpp"

using redlock::parse_duration;
using redlock::UsageError;
using std::chrono::milliseconds;

TEST(Duration, AcceptsEveryUnitAndCompounds) {
    EXPECT_EQ(parse_duration("250ms", "x"), milliseconds(250));
    EXPECT_EQ(parse_duration("30s", "x"), milliseconds(30'000));
    EXPECT_EQ(parse_duration("5m", "x"), milliseconds(300'000));
    EXPECT_EQ(parse_duration("1h", "x"), milliseconds(3'600'000));
    EXPECT_EQ(parse_duration("1h30m", "x"), milliseconds(5'400'000));
    EXPECT_EQ(parse_duration("1m500ms", "x"), milliseconds(60'500));
}

TEST(Duration, BareNumberIsSeconds) {
    EXPECT_EQ(parse_duration("7", "x"), milliseconds(7000));
}

TEST(Duration, RejectsZeroNegativeGarbageAndOverflow) {
    for (const char* bad : {"", "0", "0s", "-5s", "abc", "5x", "1h30", "1.5s", "s", "30s ",
                            "99999999999999999999", "9999999999999h"}) {
        EXPECT_THROW(parse_duration(bad, "--ttl"), UsageError) << bad;
    }
}

TEST(Duration, ErrorNamesTheOptionAndTheValue) {
    try {
        parse_duration("5x", "--ttl");
        FAIL();
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("--ttl"), std::string::npos);
        EXPECT_NE(std::string(e.what()).find("'5x'"), std::string::npos);
    }
}

TEST(Duration, FormatsForHumans) {
    EXPECT_EQ(redlock::format_duration(milliseconds(250)), "250ms");
    EXPECT_EQ(redlock::format_duration(milliseconds(1500)), "1.500s");
    EXPECT_EQ(redlock::format_duration(milliseconds(30'000)), "30s");
    EXPECT_EQ(redlock::format_duration(milliseconds(723'000)), "12m3s");
    EXPECT_EQ(redlock::format_duration(milliseconds(3'605'000)), "1h0m5s");
}

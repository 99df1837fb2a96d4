#include "util/duration.hpp"

#include <gtest/gtest.h>

#include <limits>

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
    for (const char* bad : {"", "0", "0s", "-5s", "abc", "5x", "1h30", "s", "30s ",
                            "99999999999999999999", "9999999999999h"}) {
        EXPECT_THROW(parse_duration(bad, "--ttl"), UsageError) << bad;
    }
}

TEST(Duration, AcceptsFractionsAsFlockAndTimeoutDo) {
    EXPECT_EQ(parse_duration("0.5", "x"), milliseconds(500));
    EXPECT_EQ(parse_duration("1.5", "x"), milliseconds(1500));
    EXPECT_EQ(parse_duration("1.5s", "x"), milliseconds(1500));
    EXPECT_EQ(parse_duration("0.25m", "x"), milliseconds(15'000));
    EXPECT_EQ(parse_duration("1.5h", "x"), milliseconds(5'400'000));
    EXPECT_EQ(parse_duration("0.001s", "x"), milliseconds(1));
    EXPECT_EQ(parse_duration("1m0.5s", "x"), milliseconds(60'500));
    EXPECT_EQ(parse_duration("2.000", "x"), milliseconds(2000));
    EXPECT_EQ(parse_duration("3649.5d", "x"), milliseconds(3649LL * 86'400'000 + 43'200'000));
}

TEST(Duration, RejectsBadFractions) {
    for (const char* bad : {"0.0", "0.0001s", "1.5ms", ".5s", "1.s", "1..5s", "1.5.5s", "1.2.3",
                            "0.5s.", "1.0000000001s", "3650.5d", "1h0.5", "-0.5", "0.5 s"}) {
        EXPECT_THROW(parse_duration(bad, "-w"), UsageError) << bad;
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

// A duration the user gave is echoed back in messages ("--once-per 400d is out of range", "this
// slot (every 1h, ...)"): whole hours and minutes without the zero units after them, as the user
// would write them; a zero unit between two others stays ("1h0m5s").
TEST(Duration, FormatsWholeHoursAndMinutesWithoutTrailingZeroUnits) {
    using redlock::format_duration;
    EXPECT_EQ(format_duration(milliseconds(3'600'000)), "1h");
    EXPECT_EQ(format_duration(milliseconds(5'400'000)), "1h30m");
    EXPECT_EQ(format_duration(milliseconds(400LL * 86'400'000)), "9600h");
    EXPECT_EQ(format_duration(milliseconds(120'000)), "2m");
    EXPECT_EQ(format_duration(milliseconds(60'000)), "1m");
    EXPECT_EQ(format_duration(milliseconds(-3'600'000)), "-1h");
    EXPECT_EQ(format_duration(milliseconds(3'660'000)), "1h1m");
    EXPECT_EQ(format_duration(milliseconds(3'601'000)), "1h0m1s");
    EXPECT_EQ(format_duration(milliseconds(61'000)), "1m1s");
}

// What format_duration prints of a duration in whole seconds reads back as the same duration.
TEST(Duration, FormattedWholeSecondsParseBackToThemselves) {
    for (long long s : {1LL, 59LL, 60LL, 61LL, 3'599LL, 3'600LL, 3'601LL, 3'660LL, 86'400LL,
                        90'061LL, 366LL * 86'400, 3'650LL * 86'400}) {
        milliseconds d(s * 1000);
        EXPECT_EQ(parse_duration(redlock::format_duration(d), "x"), d) << s;
    }
}

// A ledger entry's duration comes from a server: every int64 must format, the minimum (whose
// negation does not fit) included, without recursing or overflowing.
TEST(Duration, FormatsEveryInt64) {
    using redlock::format_duration;
    constexpr long long min = std::numeric_limits<long long>::min();
    constexpr long long max = std::numeric_limits<long long>::max();
    EXPECT_EQ(format_duration(milliseconds(-250)), "-250ms");
    EXPECT_EQ(format_duration(milliseconds(-3'605'000)), "-1h0m5s");
    EXPECT_EQ(format_duration(milliseconds(max)), "2562047788015h12m55s");
    EXPECT_EQ(format_duration(milliseconds(min)), "-2562047788015h12m55s");
    EXPECT_EQ(format_duration(milliseconds(min + 1)), "-2562047788015h12m55s");
    EXPECT_EQ(format_duration(milliseconds(-1)), "-1ms");
}

// StuckDetector's arithmetic: --max-renewals turns into a deadline, which must not overflow.
#include "run/heartbeat.hpp"

#include <gtest/gtest.h>

namespace redlock {
namespace {

TEST(StuckDetector, MaxRenewalsWithALongTtlDoesNotOverflowIntoStuckAtOnce) {
    // -t 1d --max-renewals 1000000: renewals every 8h, the deadline ~3.3 million years away,
    // which overflows a nanosecond time point; a wrap made the run stuck at its start.
    Deadline start = BootClock::now();
    StuckDetector d("", std::nullopt, 1'000'000, Millis(8LL * 3600 * 1000), start);
    EXPECT_GT(d.due(), start);
    EXPECT_EQ(d.stuck(start), "");
    EXPECT_EQ(d.stuck(start + std::chrono::hours(24 * 365 * 100)), "");
}

TEST(StuckDetector, MaxRenewalsStillStopsAfterTheLastRenewal) {
    Deadline start{};
    StuckDetector d("", std::nullopt, 3, Millis(1000), start);
    EXPECT_EQ(d.due(), start + Millis(4000));
    EXPECT_EQ(d.stuck(start + Millis(3999)), "");
    EXPECT_NE(d.stuck(start + Millis(4000)), "");
}

}  // namespace
}  // namespace redlock

// Retry delays: doubling up to the cap, jittered within the upper half of each step.
#include "util/backoff.hpp"

#include <gtest/gtest.h>

#include <set>

using redlock::Backoff;
using redlock::Millis;

TEST(Backoff, DoublesUpToTheCapWithinTheUpperHalfOfEachStep) {
    Backoff b(Millis(50), Millis(1000));
    for (long step : {50, 100, 200, 400, 800, 1000, 1000, 1000}) {
        Millis d = b.next();
        EXPECT_GE(d.count(), step - step / 2) << step;
        EXPECT_LE(d.count(), step) << step;
    }
}

TEST(Backoff, ResetStartsFromTheFirstStepAgain) {
    Backoff b(Millis(50), Millis(1000));
    for (int i = 0; i < 10; ++i) b.next();
    b.reset();
    EXPECT_LE(b.next().count(), 50);
}

TEST(Backoff, IsJittered) {
    // Many runs retrying in lockstep is what the jitter is for: the delays must differ.
    std::set<long> seen;
    for (int i = 0; i < 50; ++i) seen.insert(Backoff(Millis(400), Millis(400)).next().count());
    EXPECT_GT(seen.size(), 5u);
}

TEST(Backoff, ACapBelowTheFirstStepOrZeroStillGivesPositiveDelays) {
    Backoff b(Millis(0), Millis(0));
    for (int i = 0; i < 5; ++i) EXPECT_GE(b.next().count(), 1);
    Backoff c(Millis(100), Millis(10));
    EXPECT_LE(c.next().count(), 100);
}

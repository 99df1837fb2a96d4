// The metrics file's own parse and merge: what one run writes, the next reads back and adds to.
#include "run/metrics.hpp"

#include <gtest/gtest.h>

using namespace redlock;

TEST(MetricsFile, RoundTripsAndAccumulatesPerLock) {
    MetricsFile f;
    MetricsUpdate u;
    u.lock = "nightly";
    u.outcome = "ran";
    u.ran = true;
    u.start_s = 1'700'000'000.25;
    u.end_s = 1'700'000'010.5;
    u.duration_s = 10.25;
    u.success = true;
    apply_update(f, u);
    MetricsFile back = parse_metrics(format_metrics(f));
    apply_update(back, u);
    MetricsUpdate busy;
    busy.lock = "odd \"name\"\\\n";
    busy.outcome = "busy";
    apply_update(back, busy);
    MetricsFile again = parse_metrics(format_metrics(back));
    EXPECT_EQ(again["nightly"].outcomes["ran"], 2);
    EXPECT_DOUBLE_EQ(again["nightly"].gauges["last_end_timestamp_seconds"], 1'700'000'010.5);
    EXPECT_DOUBLE_EQ(again["nightly"].gauges["last_success_timestamp_seconds"], 1'700'000'010.5);
    EXPECT_EQ(again[busy.lock].outcomes["busy"], 1);
    EXPECT_EQ(again[busy.lock].gauges.count("last_start_timestamp_seconds"), 0u);
}

TEST(MetricsFile, AFailureKeepsTheLastSuccess) {
    MetricsFile f;
    MetricsUpdate ok{"j", "ran", true, 10, 20, 10, 0, true};
    MetricsUpdate bad{"j", "ran", true, 30, 40, 10, 3, false};
    apply_update(f, ok);
    apply_update(f, bad);
    EXPECT_EQ(f["j"].gauges["last_success_timestamp_seconds"], 20);
    EXPECT_EQ(f["j"].gauges["last_exit_status"], 3);
}

TEST(MetricsFile, ForeignAndBrokenLinesAreDropped) {
    MetricsFile f = parse_metrics(
        "# HELP x y\nother_metric{lock=\"a\"} 1\nredlock_run_outcomes_total{lock=\"a\"} 5\n"
        "redlock_run_outcomes_total{lock=\"a\",outcome=\"ran\"} NaN\n"
        "redlock_run_outcomes_total{lock=\"a\",outcome=\"ran\"\nredlock_run_last_exit_status "
        "3\nredlock_run_outcomes_total{lock=\"b\",outcome=\"lost\"} 2\n");
    EXPECT_EQ(f.count("a"), 0u);
    EXPECT_EQ(f["b"].outcomes["lost"], 2);
}

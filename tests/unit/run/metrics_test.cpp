// The metrics file's own parse and merge: what one run writes, the next reads back and adds to.
#include "run/metrics.hpp"

#include <gtest/gtest.h>

#include "util/utf8.hpp"

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

// The text format requires UTF-8 label values: one lock name with an invalid byte made
// node_exporter and promtool reject the whole shared file, every other lock's series with it.
TEST(MetricsFile, LabelValuesAreValidUtf8WithoutControls) {
    EXPECT_EQ(label_value_text("nightly"), "nightly");
    EXPECT_EQ(label_value_text("caf\xC3\xA9 \xE2\x82\xAC"), "caf\xC3\xA9 \xE2\x82\xAC");
    EXPECT_EQ(label_value_text("a\xFF"
                               "b"),
              "a\xEF\xBF\xBD"
              "b");
    // A cut sequence: each of its bytes on its own.
    EXPECT_EQ(label_value_text("a\xE2\x82"), "a\xEF\xBF\xBD\xEF\xBF\xBD");
    // Overlong and surrogate encodings are invalid too.
    EXPECT_EQ(label_value_text("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(label_value_text("\xED\xA0\x80").find("\xED"), std::string::npos);
    // Controls (a CR or NEL ends a line for some readers); the newline is escaped instead.
    EXPECT_EQ(label_value_text("a\rb\x01\x7F\xC2\x85"
                               "c\n"),
              "a\xEF\xBF\xBD"
              "b\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
              "c\n");
    EXPECT_EQ(escape_label_value("a\\b\"c\nd\xFF"), "a\\\\b\\\"c\\nd\xEF\xBF\xBD");
}

TEST(MetricsFile, FormattedFileIsValidUtf8WithOneSeriesPerLabel) {
    MetricsFile f;
    MetricsUpdate u{"bad\xFF", "ran", true, 10, 20, 10, 0, true};
    apply_update(f, u);
    // Two names that repair to the same label, as a hand-made map may hold them.
    f["bad\xFE"].outcomes["ran"] = 2;
    f["ok\x85"].outcomes["busy\xFF"] = 1;
    std::string text = format_metrics(f);
    for (std::size_t i = 0; i < text.size();) {
        ASSERT_NE(redlock::utf8_sequence(text, i), 0u) << "invalid UTF-8 at byte " << i;
        i += redlock::utf8_sequence(text, i);
    }
    EXPECT_EQ(text.find('\r'), std::string::npos);
    const std::string series =
        "redlock_run_outcomes_total{lock=\"bad\xEF\xBF\xBD\",outcome=\"ran\"} ";
    std::size_t at = text.find(series);
    ASSERT_NE(at, std::string::npos) << text;
    EXPECT_EQ(text.find(series, at + 1), std::string::npos) << text;
    EXPECT_EQ(text.substr(at + series.size(), 2), "3\n");
    EXPECT_NE(text.find("lock=\"ok\xEF\xBF\xBD\",outcome=\"busy\xEF\xBF\xBD\"} 1\n"),
              std::string::npos)
        << text;
}

// The next run reads the repaired name back and must find the same entry as its own update.
TEST(MetricsFile, AnInvalidNameAccumulatesInOneEntryAcrossRuns) {
    MetricsUpdate u{"bad\xFF\xC2\x85name", "ran", true, 10, 20, 10, 0, true};
    MetricsFile f;
    apply_update(f, u);
    MetricsFile back = parse_metrics(format_metrics(f));
    apply_update(back, u);
    ASSERT_EQ(back.size(), 1u);
    EXPECT_EQ(back.begin()->first, "bad\xEF\xBF\xBD\xEF\xBF\xBDname");
    EXPECT_EQ(back.begin()->second.outcomes["ran"], 2);
}

// Every series an alert reads exists from a lock's first write: each outcome's counter at 0 (so
// that increase() sees the first stuck run go 0 -> 1), last_success at 0 for a job that never
// succeeded, running at 0.
TEST(MetricsFile, EverySeriesAnAlertReadsExistsFromTheFirstWrite) {
    MetricsFile f;
    MetricsUpdate busy;
    busy.lock = "j";
    busy.outcome = "busy";
    apply_update(f, busy);
    MetricsFile back = parse_metrics(format_metrics(f));
    for (const char* outcome : {"ran", "busy", "skipped-slot", "lost", "timed-out", "stuck",
                                "failed-to-start", "killed"}) {
        ASSERT_EQ(back["j"].outcomes.count(outcome), 1u) << outcome;
        EXPECT_EQ(back["j"].outcomes[outcome], std::string(outcome) == "busy" ? 1 : 0) << outcome;
    }
    EXPECT_EQ(back["j"].gauges.at("last_success_timestamp_seconds"), 0);
    EXPECT_EQ(back["j"].gauges.at("running"), 0);
}

// A command's start is written as it starts (running 1, its start time), its end brings running
// back; a command that could not be started is not counted in, and leaves its exit status.
TEST(MetricsFile, RunningCountsStartedCommandsUntilTheyEnd) {
    MetricsFile f;
    MetricsUpdate start;
    start.lock = "j";
    start.started = true;
    start.start_s = 100;
    apply_update(f, start);
    EXPECT_EQ(f["j"].gauges["running"], 1);
    EXPECT_EQ(f["j"].gauges["last_start_timestamp_seconds"], 100);
    EXPECT_EQ(f["j"].outcomes["ran"], 0);  // not counted before it ends
    MetricsUpdate end{"j", "ran", true, 100, 160, 60, 0, true};
    apply_update(f, end);
    EXPECT_EQ(f["j"].gauges["running"], 0);
    MetricsUpdate not_found{"j", "failed-to-start", true, 200, 200, 0, 127, false};
    apply_update(f, not_found);
    EXPECT_EQ(f["j"].gauges["running"], 0);
    EXPECT_EQ(f["j"].gauges["last_exit_status"], 127);
    EXPECT_EQ(f["j"].outcomes["failed-to-start"], 1);
    EXPECT_EQ(f["j"].gauges["last_success_timestamp_seconds"], 160);
}

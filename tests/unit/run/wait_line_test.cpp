#include "run/wait_line.hpp"

#include "util/printable.hpp"

#include <gtest/gtest.h>

using namespace redlock;

namespace {
WaitProgress waiting_behind(long long place) {
    WaitProgress p;
    p.key = "nightly";
    p.waited = Millis(5'400);
    p.left = Millis(54'600);
    p.place = place;
    p.busy.holder_pttl = 17'250;
    HolderInfo h;
    h.host = "web-2";
    h.pid = 4120;
    h.user = "deploy";
    h.acquired_ms = 1'000'000;
    h.now_ms = 1'000'000 + 723'000;
    p.busy.holder = h;
    return p;
}
}  // namespace

TEST(WaitLine, NamesHolderPlaceAndTimesInWholeSeconds) {
    EXPECT_EQ(format_wait_line(waiting_behind(2)),
              "waiting for lock 'nightly' (2nd in the queue; waited 5s, 55s left): held by web-2 "
              "pid 4120 (user deploy) for 12m3s, expires in 17s");
}

TEST(WaitLine, PlacesReadAsOrdinals) {
    for (auto [place, word] : std::vector<std::pair<long long, std::string>>{{1, "1st"},
                                                                             {3, "3rd"},
                                                                             {4, "4th"},
                                                                             {11, "11th"},
                                                                             {12, "12th"},
                                                                             {13, "13th"},
                                                                             {21, "21st"},
                                                                             {112, "112th"},
                                                                             {122, "122nd"}})
        EXPECT_NE(format_wait_line(waiting_behind(place)).find("(" + word + " in the queue;"),
                  std::string::npos)
            << place;
}

TEST(WaitLine, UnknownPlaceAndUnboundedWaitAreLeftOutOrSaid) {
    WaitProgress p = waiting_behind(0);
    p.left.reset();
    EXPECT_EQ(format_wait_line(p).substr(0, 55),
              "waiting for lock 'nightly' (waited 5s, no time limit): ");
}

TEST(WaitLine, AHolderWithoutInfoAndAFreeKeyAreSaidSo) {
    WaitProgress p = waiting_behind(1);
    p.busy.holder.reset();
    EXPECT_NE(format_wait_line(p).find("held by an unknown holder, expires in 17s"),
              std::string::npos);
    p.busy.holder_pttl = -2;
    EXPECT_NE(format_wait_line(p).find("): being handed over"), std::string::npos);
}

TEST(WaitLine, APermitsLockSaysAllPermitsAreHeld) {
    WaitProgress p = waiting_behind(0);
    p.permits = 3;
    p.busy.holder.reset();
    EXPECT_EQ(format_wait_line(p),
              "waiting for lock 'nightly' (waited 5s, 55s left): all 3 permits are held; the "
              "first ends in 17s");
}

// The restart guard (issue 38): a waiter held back says why, not "held by an unknown holder".
TEST(WaitLine, AWaiterHeldBackByTheRestartGuardSaysWhy) {
    WaitProgress p = waiting_behind(1);
    p.busy.holder.reset();
    p.busy.holder_pttl = 7'000;
    p.busy.restart_uptime_s = 3;
    EXPECT_EQ(format_wait_line(p),
              "waiting for lock 'nightly' (1st in the queue; waited 5s, 55s left): held back: "
              "Redis restarted 3s ago without this lock's data, and a holder from before may "
              "still run (7s left of --restart-guard)");
}

// A line wider than the terminal is cut where a word ends, never inside one, and says it was cut.
TEST(WaitLine, ALineTooWideIsCutAtAWordBoundary) {
    const std::string line = format_wait_line(waiting_behind(2));
    // "... held by web-2 pid 4120 (user deploy) for 12m3s, expires in 17s"
    for (std::size_t columns = 20; columns < line.size(); ++columns) {
        std::string cut = fit_wait_line(line, columns);
        EXPECT_LE(display_width(cut), columns) << columns << ": " << cut;
        ASSERT_TRUE(cut.ends_with("...")) << columns << ": " << cut;
        std::string kept = cut.substr(0, cut.size() - 3);
        // What is kept is the line up to the end of a word: a space follows, or the separator
        // after the word (left out: "55s left)..." rather than "55s left):...") and then one.
        ASSERT_TRUE(line.starts_with(kept)) << cut;
        char next = line[kept.size()];
        EXPECT_TRUE(next == ' ' || (std::string_view(",;:").find(next) != std::string_view::npos &&
                                    line[kept.size() + 1] == ' '))
            << columns << ": " << cut;
        EXPECT_FALSE(kept.ends_with(" ") || kept.ends_with(",") || kept.ends_with(":") ||
                     kept.ends_with(";"))
            << cut;
    }
    EXPECT_EQ(fit_wait_line(line, line.size()), line);
    EXPECT_EQ(fit_wait_line(line, 80),
              "waiting for lock 'nightly' (2nd in the queue; waited 5s, 55s left): held by...");
}

// A line that is one word wider than the terminal can only be cut inside it.
TEST(WaitLine, ALineOfOneWordWiderThanTheTerminalIsCutInside) {
    std::string cut = fit_wait_line(std::string(200, 'x'), 40);
    EXPECT_EQ(cut, std::string(37, 'x') + "...");
    EXPECT_EQ(fit_wait_line("waiting for lock '" + std::string(200, 'x') + "'", 40),
              "waiting for lock...");
}

// Non-ASCII text counts one column per character, and a cut never splits one.
TEST(WaitLine, ACutCountsCharactersNotBytes) {
    std::string line = "waiting for lock 'nächtlich' (waited 5s): held by höst pid 1";
    EXPECT_EQ(fit_wait_line(line, display_width(line)), line);
    EXPECT_EQ(fit_wait_line(line, 40), "waiting for lock 'nächtlich' (waited...");
}

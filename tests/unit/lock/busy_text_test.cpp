// The busy messages of a single node and of a quorum (lock/busy_text.hpp), one function for
// both: the texts the end-to-end tests and the man page's examples show.
#include "lock/busy_text.hpp"

#include <gtest/gtest.h>

using namespace redlock;

namespace {

const LockKeys keys = LockKeys::make("job", "");

AcquireResult busy(long long pttl) {
    AcquireResult r;
    r.holder_pttl = pttl;
    return r;
}

}  // namespace

TEST(BusyText, OneNodeSaysWhenTheWayMayClear) {
    EXPECT_EQ(busy_text(keys, 3, false, busy(17'000)),
              "all 3 permits of lock 'job' are held or promised to waiting runs; the first ends "
              "in 17s");
    EXPECT_EQ(busy_text(keys, 3, false, busy(-1)),
              "all 3 permits of lock 'job' are held or promised to waiting runs");
    EXPECT_EQ(busy_text(keys, 1, true, busy(29'000)),
              "lock 'job' is held by an exclusive holder, or an exclusive run waits for it ahead "
              "of shared ones; that expires in 29s");
    EXPECT_EQ(busy_text(keys, 1, true, busy(-1)),
              "lock 'job' is held by an exclusive holder, or an exclusive run waits for it ahead "
              "of shared ones");
    EXPECT_EQ(busy_text(keys, 1, false, busy(5'000)).rfind("lock 'job' is held by ", 0), 0u);
}

TEST(BusyText, AQuorumCountsTheNodes) {
    const NodeTally tally{2, 5, 4};
    EXPECT_EQ(busy_text(keys, 3, false, busy(17'000), tally),
              "all 3 permits of lock 'job' are held or promised to waiting runs: no permit was "
              "given to this run by a majority (2 of 5 nodes at most, 4 answered, 3 needed)");
    EXPECT_EQ(busy_text(keys, 1, true, std::nullopt, tally),
              "lock 'job' is held by an exclusive holder, or an exclusive run waits for it ahead "
              "of shared ones: only 2 of 5 nodes let this run in (4 answered, 3 needed)");
    EXPECT_EQ(busy_text(keys, 1, false, std::nullopt, tally),
              "lock 'job' is held elsewhere: only 2 of 5 nodes accepted it (4 answered, 3 "
              "needed)");
    EXPECT_EQ(busy_text(keys, 1, false, busy(5'000), tally)
                  .rfind("lock 'job' is held elsewhere: only 2 of 5 nodes accepted it (4 "
                         "answered, 3 needed), held by ",
                         0),
              0u);
}

// The Redlock arithmetic and the URL list rules of the quorum mode: majorities, the clock-drift
// allowance, validity, the fence step, and how several URLs are told apart.
#include "lock/quorum/quorum_math.hpp"

#include <gtest/gtest.h>

#include "redis/url_list.hpp"
#include "util/errors.hpp"

using namespace redlock;
using std::chrono::milliseconds;

TEST(QuorumMath, MajorityIsMoreThanHalf) {
    EXPECT_EQ(majority(1), 1u);
    EXPECT_EQ(majority(3), 2u);
    EXPECT_EQ(majority(4), 3u);
    EXPECT_EQ(majority(5), 3u);
    EXPECT_EQ(majority(6), 4u);
    EXPECT_EQ(majority(7), 4u);
}

TEST(QuorumMath, AnyTwoMajoritiesShareANode) {
    for (std::size_t n = 1; n <= 15; ++n) EXPECT_GT(2 * majority(n), n) << n;
}

TEST(QuorumMath, DriftIsOnePercentPlusTwoMilliseconds) {
    EXPECT_EQ(clock_drift(milliseconds(10'000)), milliseconds(102));
    EXPECT_EQ(clock_drift(milliseconds(100)), milliseconds(3));
    EXPECT_EQ(clock_drift(milliseconds(30'000)), milliseconds(302));
}

TEST(QuorumMath, ValidityIsTtlMinusElapsedMinusDrift) {
    EXPECT_EQ(quorum_validity(milliseconds(10'000), milliseconds(0)), milliseconds(9'898));
    EXPECT_EQ(quorum_validity(milliseconds(10'000), milliseconds(40)), milliseconds(9'858));
    EXPECT_EQ(quorum_validity(milliseconds(1'000), milliseconds(987)), milliseconds(1));
}

TEST(QuorumMath, NoValidityLeftMeansNotHeld) {
    EXPECT_FALSE(quorum_validity(milliseconds(1'000), milliseconds(988)).has_value());
    EXPECT_FALSE(quorum_validity(milliseconds(1'000), milliseconds(5'000)).has_value());
    EXPECT_FALSE(quorum_holds(5, 5, milliseconds(1'000), milliseconds(988)));
}

TEST(QuorumMath, HeldNeedsAMajorityInTime) {
    EXPECT_TRUE(quorum_holds(3, 5, milliseconds(1'000), milliseconds(10)));
    EXPECT_FALSE(quorum_holds(2, 5, milliseconds(1'000), milliseconds(10)));
    EXPECT_TRUE(quorum_holds(2, 3, milliseconds(1'000), milliseconds(10)));
    EXPECT_FALSE(quorum_holds(2, 4, milliseconds(1'000), milliseconds(10)));
    EXPECT_FALSE(quorum_holds(0, 0, milliseconds(1'000), milliseconds(0)));
}

TEST(QuorumMath, FenceIsAboveTheHighestCounter) {
    EXPECT_EQ(quorum_fence(41), 42);
    EXPECT_EQ(quorum_fence(1'796'230'030'680'203), 1'796'230'030'680'204);
}

TEST(UrlList, SplitsAtCommasThatStartAUrl) {
    auto urls = split_url_list({"redis://a:1,redis://b:2,unix:///run/r.sock?db=2"});
    ASSERT_EQ(urls.size(), 3u);
    EXPECT_EQ(urls[0], "redis://a:1");
    EXPECT_EQ(urls[1], "redis://b:2");
    EXPECT_EQ(urls[2], "unix:///run/r.sock?db=2");
}

TEST(UrlList, KeepsCommasInsideOneUrl) {
    auto urls = split_url_list({"redis-sentinel://s1,s2,s3/mymaster", "redis://u:p,w@h"});
    ASSERT_EQ(urls.size(), 2u);
    EXPECT_EQ(urls[0], "redis-sentinel://s1,s2,s3/mymaster");
    EXPECT_EQ(urls[1], "redis://u:p,w@h");
}

TEST(UrlList, RepeatedOptionsAndListsCombine) {
    EXPECT_EQ(split_url_list({"redis://a", "redis://b,redis://c"}).size(), 3u);
    EXPECT_TRUE(split_url_list({}).empty());
}

TEST(UrlList, TwoNodesAreRefusedOthersAccepted) {
    EXPECT_THROW(check_node_count(2), UsageError);
    EXPECT_NO_THROW(check_node_count(1));
    EXPECT_NO_THROW(check_node_count(3));
    EXPECT_NO_THROW(check_node_count(4));
}

// The one mapping of a backend's last attempt onto the run's Acquisition (lock/acquisition.hpp).
#include "lock/acquisition.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace redlock;

namespace {

std::string never() {
    throw std::logic_error("asked when it must not be");
}

}  // namespace

TEST(Acquisition, ASignalSaysNothingElse) {
    LastAttempt last;
    last.interrupted_by = 15;
    last.slot = 7;
    Acquisition a = acquisition(last, never, never);
    EXPECT_EQ(a.interrupted_by, 15);
    EXPECT_FALSE(a.acquired);
    EXPECT_FALSE(a.slot);
}

TEST(Acquisition, ADoneSlotIsNeitherBusyNorHeld) {
    LastAttempt last;
    last.slot = 7;
    last.slot_done = SlotRecord{};
    Acquisition a = acquisition(last, never, never);
    EXPECT_EQ(a.slot, 7);
    EXPECT_TRUE(a.slot_done);
    EXPECT_TRUE(a.busy.empty());
}

TEST(Acquisition, BusyAsksForTheMessageOnly) {
    LastAttempt last;
    last.slot = 7;
    Acquisition a = acquisition(
        last, [] { return std::string("held by x"); }, never);
    EXPECT_FALSE(a.acquired);
    EXPECT_EQ(a.busy, "held by x");
    EXPECT_EQ(a.slot, 7);
}

TEST(Acquisition, HeldCarriesTheFencePermitAndLeaseStart) {
    LastAttempt last;
    last.acquired = true;
    last.fence = 42;
    last.permit = 2;
    last.lease_start = Deadline(std::chrono::seconds(5));
    Acquisition a = acquisition(last, never, [] { return std::string("on a:1"); });
    EXPECT_TRUE(a.acquired);
    EXPECT_EQ(a.fence, 42);
    EXPECT_EQ(a.permit, 2);
    EXPECT_EQ(a.lease_start, last.lease_start);
    EXPECT_EQ(a.where, "on a:1");
    EXPECT_TRUE(a.busy.empty());
}

TEST(Acquisition, AHoldThatCannotBeConfirmedIsNoAcquisition) {
    LastAttempt last;
    last.acquired = true;
    EXPECT_THROW(acquisition(last, never, never), std::logic_error);
}

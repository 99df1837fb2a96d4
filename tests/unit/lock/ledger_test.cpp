// The pure parts of the ledger: slot arithmetic with its range checks, the entry encoding, and
// the keys landing in the lock's slot.
#include "lock/ledger.hpp"

#include <gtest/gtest.h>

#include <climits>

#include "lock/keys.hpp"
#include "redis/cluster_slots.hpp"
#include "util/errors.hpp"

using namespace redlock;

namespace {
OncePer every(long long period_ms, long long offset_ms = 0) {
    OncePer p;
    p.period = Millis(period_ms);
    p.offset = Millis(offset_ms);
    return p;
}
}  // namespace

TEST(OncePerSlot, FloorsRedisTimeMinusTheOffsetByThePeriod) {
    const long long hour = 3'600'000;
    EXPECT_EQ(slot_of(0, every(hour)), 0);
    EXPECT_EQ(slot_of(hour - 1, every(hour)), 0);
    EXPECT_EQ(slot_of(hour, every(hour)), 1);
    // A daily job at 02:30 UTC: slots start at 02:30.
    const long long day = 24 * hour, offset = 2 * hour + 30 * 60'000;
    long long at_0229 = 19'000 * day + offset - 60'000;
    long long at_0230 = 19'000 * day + offset;
    EXPECT_EQ(slot_of(at_0230, every(day, offset)), slot_of(at_0229, every(day, offset)) + 1);
    EXPECT_EQ(slot_start_ms(slot_of(at_0230, every(day, offset)), every(day, offset)), at_0230);
    // Before the first slot of the offset: negative, floored rather than truncated.
    EXPECT_EQ(slot_of(0, every(hour, 1000)), -1);
}

TEST(OncePerSlot, RejectsClocksAndPoliciesOutOfRange) {
    EXPECT_THROW(slot_of(-1, every(3'600'000)), DataError);
    EXPECT_THROW(slot_of(300'000'000'000'000LL, every(3'600'000)), DataError);
    EXPECT_THROW(slot_of(1000, every(0)), UsageError);
    EXPECT_THROW(slot_of(1000, every(999)), UsageError);
    EXPECT_THROW(slot_of(1000, every(once_period_max.count() + 1)), UsageError);
    EXPECT_THROW(slot_of(1000, every(10'000, 10'000)), UsageError);
    EXPECT_THROW(slot_of(1000, every(10'000, -1)), UsageError);
    EXPECT_EQ(once_record_ttl(every(10'000)), Millis(30'000));
}

// A hostile server's slot (an acquire reply) must not overflow slot * period: only the slots of
// a real clock (0 to the year 10000) are taken, and slot_start_ms refuses any other.
TEST(OncePerSlot, OnlySlotsOfARealClockAreTaken) {
    const long long day = 86'400'000;
    EXPECT_TRUE(slot_in_range(slot_of(0, every(day)), every(day)));
    EXPECT_TRUE(slot_in_range(slot_of(max_time_ms, every(day)), every(day)));
    EXPECT_TRUE(slot_in_range(-1, every(day, 1000)));
    EXPECT_FALSE(slot_in_range(-1, every(day)));
    EXPECT_FALSE(slot_in_range(slot_of(max_time_ms, every(day)) + 1, every(day)));
    EXPECT_FALSE(slot_in_range(max_slot, every(day)));
    EXPECT_THROW(slot_start_ms(max_slot, every(day)), DataError);
    EXPECT_THROW(slot_start_ms(LLONG_MIN, every(day)), DataError);
    EXPECT_EQ(slot_start_ms(slot_of(max_time_ms, every(day)), every(day)), max_time_ms / day * day);
}

TEST(LedgerEntry, RoundTripsThroughTheStoredForm) {
    LedgerEntry e;
    e.duration_ms = 1234;
    e.host = "web\t1\\x";
    e.pid = 42;
    e.user = "deploy\nuser";
    e.exit_status = 3;
    e.fence = 1'700'000'000'000'123LL;
    e.command = "sh -c 'a=b\tc'";
    // What the script prepends.
    std::string stored = "end_ms=2000\tstart_ms=766\toutcome=ran\t" + encode_entry(e);
    LedgerEntry d = decode_entry(stored);
    EXPECT_EQ(d.end_ms, 2000);
    EXPECT_EQ(d.start_ms, 766);
    EXPECT_EQ(d.outcome, "ran");
    EXPECT_EQ(d.duration_ms, 1234);
    EXPECT_EQ(d.host, e.host);
    EXPECT_EQ(d.user, e.user);
    EXPECT_EQ(d.pid, 42);
    EXPECT_EQ(d.exit_status, 3);
    EXPECT_FALSE(d.signal);
    EXPECT_EQ(d.fence, e.fence);
    EXPECT_EQ(d.command, e.command);
}

TEST(LedgerEntry, DecodingHostileInputNeverThrows) {
    LedgerEntry d = decode_entry("exit=99999\tsignal=-3\tpid=x\tnoequals\t=\tunknown=1\tend_ms=\\");
    EXPECT_FALSE(d.exit_status);
    EXPECT_FALSE(d.signal);
    EXPECT_EQ(d.pid, 0);
    EXPECT_EQ(d.end_ms, 0);
    EXPECT_EQ(decode_entry("").outcome, "");
}

TEST(LedgerEntry, OutcomesHaveTheirDocumentedNames) {
    EXPECT_EQ(outcome_name(Outcome::skipped_slot), "skipped-slot");
    EXPECT_EQ(outcome_name(Outcome::timed_out), "timed-out");
    EXPECT_EQ(outcome_name(Outcome::failed_to_start), "failed-to-start");
}

TEST(LedgerKeys, LiveInTheLockKeysSlot) {
    for (const char* name : {"job", "a{b}c", "}{x", "{}"}) {
        LockKeys k = LockKeys::make(name, "pre:");
        EXPECT_EQ(hash_slot(k.ledger), hash_slot(k.key)) << name;
        EXPECT_EQ(hash_slot(k.once), hash_slot(k.key)) << name;
        EXPECT_NE(k.ledger, k.once);
    }
}

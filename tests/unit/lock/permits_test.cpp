// The permits record and key naming: the record round-trips and refuses anything else, and every
// permit key (and its holder info) lands in the lock key's slot, as its companion.
#include "lock/node/permits.hpp"
#include "redis/cluster_slots.hpp"

#include <gtest/gtest.h>

using redlock::companion_key;
using redlock::hash_slot;
using redlock::is_permit_companion;
using redlock::LockKeys;
using redlock::max_permits;
using redlock::permit_key_prefix;
using redlock::permits_of;
using redlock::permits_record;

TEST(PermitsRecord, RoundTrips) {
    for (int n : {2, 3, 17, max_permits}) EXPECT_EQ(permits_of(permits_record(n)), n);
}

TEST(PermitsRecord, RefusesTokensAndBadNumbers) {
    EXPECT_FALSE(permits_of("3f2a9c1e3f2a9c1e3f2a9c1e3f2a9c1e"));
    EXPECT_FALSE(permits_of("redlock-permits/"));
    EXPECT_FALSE(permits_of("redlock-permits/0"));
    EXPECT_FALSE(permits_of("redlock-permits/-3"));
    EXPECT_FALSE(permits_of("redlock-permits/3x"));
    EXPECT_FALSE(permits_of("redlock-permits/1001"));
    EXPECT_FALSE(permits_of("redlock-permits/99999999999999999999"));
}

TEST(PermitKeys, ShareTheLockSlotWhateverTheBraces) {
    for (const char* name : {"job", "jobs:{billing}:nightly", "a}b", "{}x", "}{"}) {
        LockKeys keys = LockKeys::make(name, "");
        std::string prefix = permit_key_prefix(keys);
        for (int i : {1, 2, 999}) {
            std::string permit = prefix + std::to_string(i);
            EXPECT_EQ(permit, companion_key(keys.key, "permit:" + std::to_string(i))) << name;
            EXPECT_EQ(hash_slot(permit), hash_slot(keys.key)) << name;
            EXPECT_EQ(hash_slot(permit + ":info"), hash_slot(keys.key)) << name;
        }
    }
}

// list skips a permit's keys, the fence its holder drew included, and lists a lock merely named so.
TEST(PermitKeys, EveryPermitKeyIsACompanionNotALock) {
    LockKeys keys = LockKeys::make("job", "");
    std::string permit = permit_key_prefix(keys) + "2";
    EXPECT_TRUE(is_permit_companion(permit));
    EXPECT_TRUE(is_permit_companion(permit + ":info"));
    EXPECT_TRUE(is_permit_companion(permit + ":fence"));
    EXPECT_FALSE(is_permit_companion(permit + ":other"));
    EXPECT_FALSE(is_permit_companion("job:fence"));
    EXPECT_FALSE(is_permit_companion("permit:2:fence"));
}

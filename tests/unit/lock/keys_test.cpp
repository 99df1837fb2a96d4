// Key naming: the slot function matches Redis Cluster's, and every companion key lands in the
// lock key's slot whatever braces the key contains.
#include "lock/keys.hpp"
#include "redis/cluster_slots.hpp"

#include <gtest/gtest.h>

using redlock::companion_key;
using redlock::hash_slot;
using redlock::LockKeys;

TEST(HashSlot, MatchesRedisClusterKeyslot) {
    // Values from CLUSTER KEYSLOT and the Redis Cluster specification.
    EXPECT_EQ(hash_slot("foo"), 12182u);
    EXPECT_EQ(hash_slot("bar"), 5061u);
    EXPECT_EQ(hash_slot("123456789"), 0x31C3u);  // the CRC16/XMODEM check value
    EXPECT_EQ(hash_slot(""), 0u);
}

TEST(HashSlot, HashTagsPickTheHashedPart) {
    EXPECT_EQ(hash_slot("{user1000}.following"), hash_slot("{user1000}.followers"));
    EXPECT_EQ(hash_slot("{user1000}.following"), hash_slot("user1000"));
    EXPECT_EQ(hash_slot("foo{bar}{zap}"), hash_slot("bar"));
    // An empty tag does not count: the whole key is hashed.
    EXPECT_EQ(hash_slot("{}foo"), hash_slot(std::string("{}foo")));
    EXPECT_NE(hash_slot("{}foo"), hash_slot("foo"));
    EXPECT_EQ(hash_slot("{{bar}}zap"), hash_slot("{bar"));
    EXPECT_EQ(hash_slot("foo{"), hash_slot(std::string("foo{")));
}

TEST(CompanionKey, WrapsAnUntaggedKeyInBraces) {
    EXPECT_EQ(companion_key("backup", "fence"), "{backup}:fence");
    EXPECT_EQ(hash_slot(companion_key("backup", "fence")), hash_slot("backup"));
}

TEST(CompanionKey, KeepsAnExistingHashTag) {
    EXPECT_EQ(companion_key("jobs:{eu}:nightly", "fence"), "jobs:{eu}:nightly:fence");
    EXPECT_EQ(hash_slot(companion_key("jobs:{eu}:nightly", "fence")), hash_slot("eu"));
}

TEST(CompanionKey, SharesTheSlotForEveryShapeOfBraces) {
    for (const char* key : {"a",      "foo", "{a}", "x{a}y", "a}b",
                            "}",      "}{",  "{}",  "{}x",   "{}{a}",
                            "a{b",    "{a",  "a{",  "{{a}}", "a}{b}",
                            "}a{b}c", "{",   "a}}", "ab}{",  "lock:with spaces",
                            "ünïcode"}) {
        for (const char* suffix : {"fence", "info", "wait"}) {
            std::string c = companion_key(key, suffix);
            EXPECT_EQ(hash_slot(c), hash_slot(key)) << key << " -> " << c;
            EXPECT_NE(c, key);
            EXPECT_TRUE(c.ends_with(std::string(":") + suffix)) << c;
        }
    }
}

TEST(CompanionKey, DistinctForDistinctKeysAndSuffixes) {
    EXPECT_NE(companion_key("a", "fence"), companion_key("b", "fence"));
    EXPECT_NE(companion_key("a}", "fence"), companion_key("b}", "fence"));
    EXPECT_NE(companion_key("a", "fence"), companion_key("a", "info"));
    EXPECT_NE(companion_key("a}b", "fence"), companion_key("a}b", "wait"));
}

TEST(LockKeys, PrefixFormsTheKeyAndCompanionsFollowIt) {
    LockKeys k = LockKeys::make("backup", "app:");
    EXPECT_EQ(k.name, "backup");
    EXPECT_EQ(k.key, "app:backup");
    EXPECT_EQ(k.fence, "{app:backup}:fence");
    for (const std::string& c : {k.fence, k.info, k.wait})
        EXPECT_EQ(hash_slot(c), hash_slot(k.key));
    EXPECT_EQ(LockKeys::make("backup", "").key, "backup");
}

TEST(LockKeys, AWaitersWakeUpListIsTheSharedPrefixPlusItsToken) {
    // release.lua names the popped waiter's list as prefix .. token: that must be the companion
    // key a waiter blocks on, in the lock's slot, for every shape of key.
    for (const char* name : {"job", "a{tag}b", "a}b", "{}x", "x{", "caf\xc3\xa9"}) {
        LockKeys k = LockKeys::make(name, "");
        const std::string token = "0123456789abcdef0123456789abcdef";
        EXPECT_EQ(k.wake_key(token), companion_key(k.key, "wake:" + token)) << name;
        EXPECT_EQ(hash_slot(k.wake_key(token)), hash_slot(k.key)) << name;
        EXPECT_EQ(hash_slot(k.wait), hash_slot(k.key)) << name;
    }
}

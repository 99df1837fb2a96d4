// Key naming: the slot function matches Redis Cluster's, and every companion key lands in the
// lock key's slot whatever braces the key contains.
#include "lock/node/keys.hpp"
#include "redis/cluster_slots.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <random>

using redlock::companion_key;
using redlock::hash_slot;
using redlock::lock_key_of;
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

TEST(CompanionKey, PutsAnExistingHashTagInFront) {
    EXPECT_EQ(companion_key("jobs:{eu}:nightly", "fence"), "{eu}jobs:{eu}:nightly:fence");
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

TEST(CompanionKey, NoTwoKeysShareACompanionAndEachStaysInItsKeysSlot) {
    // Names from a small alphabet rich in braces, every length up to 5 (exhaustive: the
    // colliding shapes are short, e.g. "job" and "{job}", "a}b" and its tagged twin), plus the
    // twins themselves and random longer ones, with and without a prefix.
    const std::string alphabet = "{}a:";
    std::vector<std::string> keys{""};
    for (std::size_t i = 0; i < keys.size() && keys[i].size() < 5; ++i)
        for (char c : alphabet) keys.push_back(keys[i] + c);
    keys.erase(keys.begin());
    std::mt19937 rng(17);
    const std::string wide = "{}ab:-\xc3";
    for (int i = 0; i < 3000; ++i) {
        std::string k;
        for (std::size_t n = rng() % 24 + 1; n > 0; --n) k += wide[rng() % wide.size()];
        keys.push_back(k);
    }
    for (std::string name : {"job", "a}b", "p:job"}) {
        keys.push_back("{" + name + "}");
        // fmt rather than "{" + ...: GCC 12 at -O3 warns (-Wrestrict) about the inlined operator+.
        std::string companion = companion_key(name, "x");
        keys.push_back(fmt::format("{{{}}}{}", companion.substr(1, companion.find('}') - 1), name));
    }
    const std::string token = "0123456789abcdef0123456789abcdef";
    std::map<std::string, std::string> owner;  // companion -> the key it was made for
    for (const std::string& key : keys) {
        LockKeys k = LockKeys::make(key, "");
        for (const std::string& c : {k.fence, k.info, k.wait, k.wake_key(token)}) {
            auto [it, fresh] = owner.emplace(c, key);
            EXPECT_TRUE(fresh || it->second == key)
                << "'" << key << "' and '" << it->second << "' share " << c;
            EXPECT_EQ(hash_slot(c), hash_slot(key)) << key << " -> " << c;
        }
        for (const char* suffix : {"fence", "info", "wait"})
            EXPECT_EQ(lock_key_of(companion_key(key, suffix), suffix), key);
    }
    // The reported twins: "--prefix p: job" and "{p:job}".
    EXPECT_NE(LockKeys::make("job", "p:").fence, LockKeys::make("{p:job}", "").fence);
    EXPECT_NE(LockKeys::make("job", "").fence, LockKeys::make("{job}", "").fence);
}

TEST(CompanionKey, LockKeyOfRefusesWhatNoKeyMakes) {
    EXPECT_EQ(lock_key_of("{job}:fence", "fence"), "job");
    EXPECT_EQ(lock_key_of("backup:fence", "fence"), std::nullopt);
    EXPECT_EQ(lock_key_of("{job}:fence", "info"), std::nullopt);
    EXPECT_EQ(lock_key_of("{}:fence", "fence"), std::nullopt);
    EXPECT_EQ(lock_key_of("{redlock-0}job:fence", "fence"), std::nullopt);  // "job" has no '}'
}

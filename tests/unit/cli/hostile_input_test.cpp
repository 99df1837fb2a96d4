// Bad input refused with messages that stay short and never show a password: lock names,
// excerpts of huge values, URL masking and IPv6 literals.
#include <gtest/gtest.h>

#include <string>

#include "lock/node/lock_name.hpp"
#include "redis/redis_url.hpp"
#include "util/errors.hpp"
#include "util/excerpt.hpp"

using namespace redlock;

namespace {

std::string usage_message(auto&& f) {
    try {
        f();
    } catch (const UsageError& e) {
        return e.what();
    }
    return "(no UsageError)";
}

}  // namespace

TEST(Excerpt, KeepsShortTextAndCutsLongTextWithItsSize) {
    EXPECT_EQ(excerpt("abc", 80), "abc");
    EXPECT_EQ(excerpt(std::string(100, 'a'), 10), "aaaaaaaaaa...(100 bytes)");
    // Never half of "é" (C3 A9).
    EXPECT_EQ(excerpt("abcdefghi\xc3\xa9xyz", 10), "abcdefghi...(14 bytes)");
}

TEST(LockName, RefusesEmptyHugeAndControlCharacters) {
    EXPECT_NO_THROW(check_lock_name("nightly-report", "locks:"));
    EXPECT_NO_THROW(check_lock_name("caf\xc3\xa9", ""));
    EXPECT_NO_THROW(check_lock_name(std::string(1024, 'n'), ""));
    EXPECT_EQ(usage_message([] { check_lock_name("", "p:"); }), "the lock NAME must not be empty");
    EXPECT_EQ(usage_message([] { check_lock_name(std::string(1000, 'n'), std::string(25, 'p')); }),
              "the lock key (--prefix and NAME) is 1025 bytes long; at most 1024");
    EXPECT_EQ(usage_message([] { check_lock_name("a\nb", ""); }),
              "the lock NAME 'a\\nb' contains a control character");
    EXPECT_EQ(usage_message([] { check_lock_name("job", "x\x7f"); }),
              "the --prefix 'x\\x7f' contains a control character");
}

// A name that is the key of another lock's companion (its fence counter, holder info, queue,
// ledger, once-per record, set of open runs, a permit, a shared holder, a waiter's wake-up list)
// would take that key as a lock and collide with the lock it belongs to.
TEST(LockName, RefusesTheKeyOfAnotherLocksCompanion) {
    for (const char* name : {"{job}:fence", "{job}:info", "{job}:wait", "{job}:ledger",
                             "{job}:once", "{job}:open", "{job}:shared", "{job}:permit:2",
                             "{job}:permit:2:info", "{job}:wake:0123456789abcdef0123456789abcdef",
                             "{job}:wake:0123456789abcdef0123456789abcdef:alive",
                             "{job}:shared:0123456789abcdef0123456789abcdef", "{c}b{c}:fence"}) {
        std::string m = usage_message([&] { check_lock_name(name, ""); });
        EXPECT_NE(m.find("is a key of lock"), std::string::npos) << name << ": " << m;
    }
    EXPECT_EQ(usage_message([] { check_lock_name("job}:fence", "{locks:"); }),
              "the lock key '{locks:job}:fence' (--prefix and NAME) is a key of lock "
              "'locks:job' (its fence); choose another NAME");
    // Names that merely look alike are locks of their own.
    for (const char* name : {"job:fence", "{job}:fencing", "{job}:other", "{job}fence", "{}:fence",
                             "{job}:", "{a}b:fence", "job}:fence"})
        EXPECT_NO_THROW(check_lock_name(name, "")) << name;
}

TEST(RedisUrlHostile, MasksThePasswordEvenWithoutSchemeSlashes) {
    for (const char* url : {"redis:/u:hunter2@host", "redis//u:hunter2@h", "http://u:hunter2@h",
                            "redis://u:hunter2@h:0", "redis:u:hunter2@h", "x:hunter2@h"}) {
        std::string m = usage_message([&] { parse_redis_url(url); });
        EXPECT_EQ(m.find("hunter2"), std::string::npos) << m;
        EXPECT_NE(m.find("***"), std::string::npos) << m;
    }
}

TEST(RedisUrlHostile, BracketsHoldOnlyIPv6Literals) {
    EXPECT_EQ(parse_redis_url("redis://[::1]:7000").host, "::1");
    // A zone id is written as RFC 6874 has it, "%25eth0"; a bare '%' is refused as a typo.
    EXPECT_EQ(parse_redis_url("redis://[fe80::1%25eth0]").host, "fe80::1%eth0");
    EXPECT_THROW(parse_redis_url("redis://[fe80::1%eth0]"), UsageError);
    EXPECT_THROW(parse_redis_url("redis://[zz::1]"), UsageError);
    EXPECT_THROW(parse_redis_url("redis://[127.0.0.1]"), UsageError);
}

TEST(RedisUrlHostile, RefusesHostsAndSocketPathsNoSystemCallCouldUse) {
    EXPECT_NO_THROW(parse_redis_url("redis://" + std::string(253, 'h')));
    EXPECT_THROW(parse_redis_url("redis://" + std::string(254, 'h')), UsageError);
    EXPECT_NO_THROW(parse_redis_url("unix:///" + std::string(106, 's')));
    EXPECT_THROW(parse_redis_url("unix:///" + std::string(107, 's')), UsageError);
    std::string m = usage_message([] { parse_redis_url("redis://" + std::string(100'000, 'h')); });
    EXPECT_LT(m.size(), 200u) << m;
}

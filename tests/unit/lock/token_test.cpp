// Tokens: 128 random bits as 32 lowercase hex digits, never repeated.
#include "lock/node/token.hpp"

#include <gtest/gtest.h>

#include <set>

TEST(Token, Is32LowercaseHexDigits) {
    std::string t = redlock::new_token();
    ASSERT_EQ(t.size(), 32u);
    for (char c : t) EXPECT_TRUE((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')) << t;
}

TEST(Token, NeverRepeats) {
    std::set<std::string> seen;
    for (int i = 0; i < 10'000; ++i) EXPECT_TRUE(seen.insert(redlock::new_token()).second);
}

TEST(Token, UsesEveryHexDigit) {
    // A constant or badly encoded source would leave digits out.
    std::set<char> digits;
    for (int i = 0; i < 100; ++i)
        for (char c : redlock::new_token()) digits.insert(c);
    EXPECT_EQ(digits.size(), 16u);
}

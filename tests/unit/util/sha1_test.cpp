#include "util/sha1.hpp"

#include <gtest/gtest.h>

#include <string>

namespace redlock {
namespace {

// FIPS 180-4's examples, and lengths around the padding's edges (one block or two), against
// Python's hashlib.
TEST(Sha1, MatchesTheStandardsExamples) {
    EXPECT_EQ(sha1_hex(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    EXPECT_EQ(sha1_hex("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    EXPECT_EQ(sha1_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    EXPECT_EQ(sha1_hex(std::string(1000000, 'a')), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

TEST(Sha1, PadsEveryLengthAroundABlocksEdge) {
    const std::pair<std::size_t, const char*> cases[] = {
        {55, "cef734ba81a024479e09eb5a75b6ddae62e6abf1"},
        {56, "901305367c259952f4e7af8323f480d59f81335b"},
        {63, "0ddc4e0cccd9a12850deb5abb0853a4425559fec"},
        {64, "bb2fa3ee7afb9f54c6dfb5d021f14b1ffe40c163"},
        {65, "78c741ddc482e4cdf8c474a0876347a0905b6233"},
        {119, "4300320394f7ee239bcdce7d3b8bcee173a0cd5c"},
        {120, "ceb2821639c4b6dcb10bce0e522ca2e608ce056d"},
        {128, "150fa3fbdc899bd0b8f95a9fb6027f564d953762"},
    };
    for (const auto& [length, digest] : cases)
        EXPECT_EQ(sha1_hex(std::string(length, 'x')), digest) << length;
}

}  // namespace
}  // namespace redlock

// Terminal-safe text: what list and status print for names and holder fields from Redis.
#include <gtest/gtest.h>

#include "util/printable.hpp"

TEST(Printable, EscapesControlsBackslashAndInvalidBytesButKeepsUtf8) {
    using redlock::printable;
    EXPECT_EQ(printable("a b:{c}"), "a b:{c}");
    EXPECT_EQ(printable("new\nline\ttab\r"), "new\\nline\\ttab\\r");
    EXPECT_EQ(printable("back\\slash"), "back\\\\slash");
    EXPECT_EQ(printable("\x1b[2J\x7f"), "\\x1b[2J\\x7f");
    EXPECT_EQ(printable("caf\xc3\xa9"), "caf\xc3\xa9");
    EXPECT_EQ(printable("bad\xff"), "bad\\xff");
    EXPECT_EQ(printable("c1\xc2\x9b"), "c1\\xc2\\x9b");  // U+009B, the 8-bit CSI
}

TEST(Printable, DisplayWidthCountsCodePoints) {
    EXPECT_EQ(redlock::display_width("caf\xc3\xa9"), 4u);
    EXPECT_EQ(redlock::display_width("bad\\xff"), 7u);
}

TEST(Printable, IsPrintableWhenNothingButBackslashesWouldBeEscaped) {
    using redlock::is_printable;
    EXPECT_TRUE(is_printable("a b:{c}\\ caf\xc3\xa9 \xc2\xa0"));
    EXPECT_TRUE(is_printable(""));
    EXPECT_FALSE(is_printable("new\nline"));
    EXPECT_FALSE(is_printable("del\x7f"));
    EXPECT_FALSE(is_printable("c1\xc2\x9b"));
    EXPECT_FALSE(is_printable("raw\x9b"));
    EXPECT_FALSE(is_printable("bad\xff"));
    EXPECT_FALSE(is_printable("cut\xc3"));
}

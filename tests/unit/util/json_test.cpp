// The JSON writer: structure, and strings that stay valid JSON whatever bytes a Redis key holds.
#include <gtest/gtest.h>

#include "util/json.hpp"

using redlock::json_string;
using redlock::JsonWriter;

TEST(JsonString, EscapesQuotesBackslashesAndNamedControls) {
    EXPECT_EQ(json_string("a\"b\\c"), R"("a\"b\\c")");
    EXPECT_EQ(json_string("\b\f\n\r\t"), R"("\b\f\n\r\t")");
}

TEST(JsonString, EscapesOtherControlCharactersAndDelete) {
    EXPECT_EQ(json_string(std::string("\x00\x01\x1f\x7f", 4)), R"("\u0000\u0001\u001f\u007f")");
    EXPECT_EQ(json_string("\x1b[31m"), R"("\u001b[31m")");
}

// U+0080-U+009F are valid UTF-8, but a terminal takes U+009B for CSI: `status --json` read on a
// terminal must not let a server drive it. The escape is the same JSON value.
TEST(JsonString, EscapesC1ControlsAsTheSameCodePoint) {
    EXPECT_EQ(json_string("c1\xc2\x9b[2J\xc2\x80\xc2\x9f"), R"("c1\u009b[2J\u0080\u009f")");
    EXPECT_EQ(json_string("nbsp\xc2\xa0"), "\"nbsp\xc2\xa0\"");
}

TEST(JsonString, KeepsPrintableAsciiAndValidUtf8) {
    EXPECT_EQ(json_string("jobs:{backup} 1/2"), "\"jobs:{backup} 1/2\"");
    EXPECT_EQ(json_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92"),
              "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\x92\"");
}

TEST(JsonString, WritesBytesThatAreNotUtf8AsTheirLatin1CodePoint) {
    EXPECT_EQ(json_string("bad\xff"), R"("bad\u00ff")");
    EXPECT_EQ(json_string("\xc3"), R"("\u00c3")");                      // truncated sequence
    EXPECT_EQ(json_string("\xc3x"), R"("\u00c3x")");                    // bad continuation
    EXPECT_EQ(json_string("\xc0\x80"), R"("\u00c0\u0080")");            // overlong NUL
    EXPECT_EQ(json_string("\xe0\x80\xaf"), R"("\u00e0\u0080\u00af")");  // overlong '/'
    EXPECT_EQ(json_string("\xed\xa0\x80"), R"("\u00ed\u00a0\u0080")");  // surrogate U+D800
    EXPECT_EQ(json_string("\xf4\x90\x80\x80"), R"("\u00f4\u0090\u0080\u0080")");  // > U+10FFFF
    EXPECT_EQ(json_string("\x80\xc3\xa9"), "\"\\u0080\xc3\xa9\"");                // resynchronises
}

TEST(JsonWriter, SeparatesMembersAndElements) {
    JsonWriter w;
    w.begin_array();
    w.begin_object().key("name").value("a").key("held").value(true).key("ttl_ms").value(-1LL);
    w.key("holder").null().key("nested").begin_object().key("pid").value(42).end_object();
    w.end_object();
    w.begin_object().key("list").begin_array().value(1).value(2).end_array().end_object();
    w.value(false);
    w.end_array();
    EXPECT_EQ(w.str(), R"([{"name":"a","held":true,"ttl_ms":-1,"holder":null,"nested":{"pid":42}},)"
                       R"({"list":[1,2]},false])");
}

TEST(JsonWriter, EmptyContainersAndLargeNumbers) {
    JsonWriter w;
    w.begin_object().key("a").begin_array().end_array().key("o").begin_object().end_object();
    w.key("fence").value(1796223727164183LL).end_object();
    EXPECT_EQ(w.str(), R"({"a":[],"o":{},"fence":1796223727164183})");
}

TEST(JsonWriter, EscapesMemberNames) {
    JsonWriter w;
    w.begin_object().key("a\"\n").value("x").end_object();
    EXPECT_EQ(w.str(), R"({"a\"\n":"x"})");
}

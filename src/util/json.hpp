// A small JSON writer for the operator commands' --json output. No JSON library is available on
// the target systems, and we only ever write flat objects and arrays of them.
//
// Strings: valid UTF-8 is copied through; '"', '\\' and the control characters U+0000-U+001F and
// U+007F are escaped. Redis keys are arbitrary bytes, so a byte that is not part of a valid UTF-8
// sequence is written as \u00XX, the code point with the byte's value (as Latin-1 would read it).
// The output is therefore always valid JSON, but such a byte reads back as that Latin-1 character:
// the escape keeps the byte's value visible, it does not make the mapping reversible.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace redlock {

// `s` as a quoted JSON string, escaped as described above.
std::string json_string(std::string_view s);

class JsonWriter {
  public:
    JsonWriter& begin_object();
    JsonWriter& end_object();
    JsonWriter& begin_array();
    JsonWriter& end_array();
    // The next member's name; must be followed by one value (or begin_object/begin_array).
    JsonWriter& key(std::string_view name);
    JsonWriter& value(std::string_view s);
    JsonWriter& value(const char* s) { return value(std::string_view(s)); }
    JsonWriter& value(long long n);
    JsonWriter& value(int n) { return value(static_cast<long long>(n)); }
    JsonWriter& value(bool b);
    JsonWriter& null();

    const std::string& str() const { return out_; }

  private:
    void before_value();

    std::string out_;
    // One entry per open container: whether it already holds an element, so the next one needs
    // a comma.
    std::vector<bool> has_element_;
    bool after_key_ = false;
};

}  // namespace redlock

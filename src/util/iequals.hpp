// Case-insensitive comparison of ASCII words: Redis command names, yes/no values of variables.
#pragma once

#include <strings.h>

#include <string_view>

namespace redlock {

// strncasecmp folds ASCII only in the C locale, which this program never leaves.
inline bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace redlock

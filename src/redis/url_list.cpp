#include "redis/url_list.hpp"

#include <cctype>

#include "util/errors.hpp"

namespace redlock {
namespace {

// Whether `s` from `pos` on reads "scheme://" (RFC 3986 scheme characters).
bool starts_url(const std::string& s, std::size_t pos) {
    std::size_t i = pos;
    if (i >= s.size() || !std::isalpha(static_cast<unsigned char>(s[i]))) return false;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '+' ||
                            s[i] == '-' || s[i] == '.'))
        ++i;
    return s.compare(i, 3, "://") == 0;
}

}  // namespace

std::vector<std::string> split_url_list(const std::vector<std::string>& values) {
    std::vector<std::string> urls;
    for (const std::string& v : values) {
        std::size_t begin = 0;
        for (std::size_t i = 0; i < v.size(); ++i) {
            if (v[i] != ',' || !starts_url(v, i + 1)) continue;
            urls.push_back(v.substr(begin, i - begin));
            begin = i + 1;
        }
        urls.push_back(v.substr(begin));
    }
    return urls;
}

void check_node_count(std::size_t nodes) {
    if (nodes == 2)
        throw UsageError(
            "two Redis URLs given: a Redlock quorum needs a majority, and the majority of two "
            "nodes is both, so losing either one stops every run; give one URL, or three or more "
            "independent masters");
}

}  // namespace redlock

#include "redis/url_list.hpp"

#include <fmt/format.h>

#include <cctype>

#include "redis/redis_url.hpp"
#include "util/errors.hpp"
#include "util/excerpt.hpp"

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

// Whether `url` parses on its own: only then may a list be cut after it.
bool complete_url(std::string_view url) {
    try {
        (void)parse_redis_url(url);
        return true;
    } catch (const UsageError&) {
        return false;
    }
}

// `url` with everything between "://" and its last '@' replaced, the user name too.
std::string userinfo_masked(std::string_view url) {
    auto at = url.rfind('@');
    if (at == std::string_view::npos) return std::string(url);
    auto scheme_end = url.find("://");
    std::size_t start =
        scheme_end == std::string_view::npos || scheme_end > at ? 0 : scheme_end + 3;
    return fmt::format("{}***{}", url.substr(0, start), url.substr(at));
}

}  // namespace

std::vector<std::string> split_url_list(const std::vector<std::string>& values) {
    std::vector<std::string> urls;
    for (const std::string& v : values) {
        std::size_t begin = 0;
        for (std::size_t i = 0; i < v.size(); ++i) {
            // A password written unescaped may hold ",redis://" (and any other character): the
            // list is cut only where what comes before is a whole URL, so that such a password
            // stays in its URL, where the error message masks it.
            if (v[i] != ',' || !starts_url(v, i + 1) ||
                !complete_url(std::string_view(v).substr(begin, i - begin)))
                continue;
            urls.push_back(v.substr(begin, i - begin));
            begin = i + 1;
        }
        urls.push_back(v.substr(begin));
    }
    return urls;
}

Endpoint parse_listed_url(const std::string& url, bool in_list, std::string_view where) {
    try {
        return parse_redis_url(url);
    } catch (const UsageError& e) {
        if (!in_list && where.empty()) throw;
        // A cut that was wrong after all leaves a piece of a password where a user name or host
        // stands; quote the URL with its whole userinfo masked, or not at all.
        std::string message = e.what();
        std::string quoted = fmt::format("invalid Redis URL '{}'", excerpt(masked_url(url)));
        std::string in = where.empty() ? std::string() : fmt::format(" in {}", where);
        if (!message.starts_with(quoted))
            throw UsageError(in_list ? "invalid Redis URL in the list" + in : message);
        std::string shown = in_list ? excerpt(userinfo_masked(url)) : excerpt(masked_url(url));
        throw UsageError(
            fmt::format("invalid Redis URL '{}'{}{}", shown, in, message.substr(quoted.size())));
    }
}

void check_node_count(std::size_t nodes, std::string_view where) {
    if (nodes == 2)
        throw UsageError(fmt::format(
            "two Redis URLs given{}: a Redlock quorum needs a majority, and the majority of two "
            "nodes is both, so losing either one stops every run; give one URL, or three or more "
            "independent masters",
            where.empty() ? std::string() : fmt::format(" in {}", where)));
}

}  // namespace redlock

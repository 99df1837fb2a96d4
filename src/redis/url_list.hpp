// Several Redis URLs for the Redlock quorum mode: -u given more than once, or REDLOCK_URL as a
// comma-separated list, and the rule on how many nodes make sense.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "redis/redis_url.hpp"

namespace redlock {

// Every URL in `values`, each value split at the commas that start a new URL (a comma followed by
// "scheme://" after a URL that parses on its own), so that a comma inside one URL (a host list,
// a password, escaped as %2C or not) is left alone.
std::vector<std::string> split_url_list(const std::vector<std::string>& values);

// parse_redis_url(url); for one URL of several (`in_list`), an error quotes it with the whole
// userinfo masked, the user name too: a wrong cut may have left a piece of a password there.
// `where`, when not empty, names where the URL came from ("REDLOCK_URL") right after it.
Endpoint parse_listed_url(const std::string& url, bool in_list, std::string_view where = {});

// One node: the single-node mode; three or more: a Redlock quorum. Two are refused with a
// UsageError that says why: a majority of two is both, so either node failing stops every run,
// and the pair tolerates no fault while looking as if it did.
void check_node_count(std::size_t nodes, std::string_view where = {});

}  // namespace redlock

// A lock key that Redis evicts under memory pressure is a lock lost without any error: the
// renewer only learns of it at its next renewal, and another run may take the lock meanwhile.
// Only maxmemory-policy noeviction rules that out, so we warn when the server says otherwise.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "redis/connection.hpp"

namespace redlock {

// Warns once (on stderr) when the maxmemory-policy of the server that holds `lock_key` is not
// noeviction. Asks with CONFIG GET; a server where CONFIG is disabled, renamed or denied by an
// ACL (managed Redis) is skipped without a word, and so is a failure to ask at all: this is
// advice, never a reason to fail. Over Redis Cluster, makes `lock_key` the connection's home key.
void warn_if_evicting(Connection& conn, std::string_view lock_key);

// The same in two halves, for a caller that sends the question in a pipeline with others
// (status): the command, and the warning from its reply, as above (an error reply: no word).
std::vector<std::string> eviction_policy_query();
void warn_if_evicting(const Connection& conn, const Reply& reply);

}  // namespace redlock

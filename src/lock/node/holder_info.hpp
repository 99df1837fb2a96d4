// What is recorded beside a held lock (the command line only with --hold-info) so that "busy"
// messages and the operator commands can say who holds it. Stored as a hash in the lock's slot,
// with the lock's TTL; that of a run with a ledger without expiry until its end is recorded
// (ledger_size below).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "redis/reply.hpp"

namespace redlock {

struct HolderInfo {
    std::string token;  // the holder's token: info is trusted only while it matches the lock
    long long fence = 0;
    long long ttl_ms = 0;
    long long acquired_ms = 0;  // Unix time in ms, by Redis's clock
    std::string host;
    long long pid = 0;
    std::string user;
    std::string command;  // empty unless --hold-info
    // The run's --ledger-size; 0: no ledger. Recorded as the field 'ledger', which marks the
    // record to outlive the lease until the run's end is recorded (lock/scripts/lib/abandoned.lua).
    std::size_t ledger_size = 0;
    long long now_ms = 0;  // not stored: Redis's clock when the info was read, if the reply had it

    // The fields this process supplies (the script adds token, fence, ttl_ms and acquired_ms).
    std::vector<std::string> own_fields() const;
    // From a flat field/value list as HGETALL returns it; unknown fields are ignored.
    static HolderInfo from_fields(const std::vector<std::string>& flat);
};

// The holder-info field/value list that the acquire, status and force_release scripts append to
// their replies, read from element `first` on; nullopt when there is none.
std::optional<HolderInfo> holder_from_reply(ReplyView r, std::size_t first);

}  // namespace redlock

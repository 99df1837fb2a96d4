// The operator commands on a permits lock (--permits N > 1): its lock key holds only the record
// of N, the holders are in the permit keys (lock/permits.hpp). status shows every holder, list
// one line with "2 of 3 held", release --token one holder and release --force all of them.
// A shared lock (--shared, lock/shared.hpp) is read and shown the same way: its lock key holds
// only a marker, its holders are listed apart ("3 shared holders").
#pragma once

#include <string>

#include "lock/lock_state.hpp"
#include "lock/permits.hpp"
#include "lock/shared.hpp"
#include "util/json.hpp"

namespace redlock {

// "2 of 3 held", or for a shared lock "2 shared holders".
std::string permits_summary(const PermitsState& permits);

// The lock as status and list show it in JSON: the plain lock's fields (token and holder null)
// plus "permits" (N), "held_permits" and "holders", each {permit, token, ttl_ms, fence, holder}.
// A shared lock: "shared": true and "holders", each without "permit".
void write_permits_json(JsonWriter& out, const LockState& lock, const PermitsState& permits);

// status's text form of a permits lock.
std::string permits_status_text(const LockState& lock, const PermitsState& permits, bool verbose);

// Whether `key` is a permit key or a permit's holder info of some lock, or a shared lock's
// holders set or holder record (list skips them).
bool is_permit_companion(std::string_view key);

// release --token T / --force on a permits lock; exit statuses as release_command's.
int release_permit_with_token(Connection& conn, const LockKeys& keys, int permits,
                              const std::string& token, bool verbose);
int force_release_all_permits(Connection& conn, const LockKeys& keys, bool verbose);
// release --token T / --force on a shared lock.
int release_shared_with_token(Connection& conn, const LockKeys& keys, const std::string& token,
                              bool verbose);
int force_release_all_shared(Connection& conn, const LockKeys& keys, bool verbose);

}  // namespace redlock

// The operator commands on a permits lock (--permits N > 1): its lock key holds only the record
// of N, the holders are in the permit keys (lock/node/permits.hpp). status shows every holder, list
// one line with "2 of 3 held", release --force a line for each holder removed.
// A shared lock (--shared, lock/node/shared.hpp) is read and shown the same way: its lock key holds
// only a marker, its holders are listed apart ("3 shared holders").
#pragma once

#include <string>

#include "lock/node/lock_state.hpp"
#include "lock/node/permits.hpp"
#include "lock/node/shared.hpp"
#include "lock/node/waiters.hpp"
#include "util/json.hpp"

namespace redlock {

// "2 of 3 held", or for a shared lock "2 shared holders".
std::string permits_summary(const PermitsState& permits);

// The lock as status and list show it in JSON: the plain lock's fields (token and holder null)
// plus "permits" (N), "held_permits" and "holders", each {permit, token, ttl_ms, fence, holder}.
// A shared lock: "shared": true and "holders", each without "permit".
// With `waiters` (status), also "waiting" and "waiters" as lock_report.hpp writes them.
void write_permits_json(JsonWriter& out, const LockState& lock, const PermitsState& permits,
                        const Waiters* waiters = nullptr);

// status's text form of a permits lock.
std::string permits_status_text(const LockState& lock, const PermitsState& permits, bool verbose);

// release --force's line for one holder removed: "permit 2: deploy@web-2 pid 4120 (command
// 'backup', token 3f2a9c1e...), 28s left", or "shared holder: ...".
std::string permit_holder_line(const LockState& lock, const PermitHolder& h, bool verbose);

}  // namespace redlock

// Redis Sentinel (redis-sentinel:// URLs): the lock lives on whichever node the sentinels call
// the master right now. Connection asks them on every (re)connect, so a failover is followed by
// the next command, and checks with ROLE that the node it reached really is a master.
#pragma once

#include <hiredis/hiredis.h>

#include <string>
#include <string_view>

#include "redis/redis_url.hpp"
#include "util/clock.hpp"

namespace redlock {

struct Timeouts;

// redis-sentinel://[user[:password]@]host[:port][,host[:port]...]/MASTERNAME[/db], or Lettuce's
// ...[/db]#MASTERNAME; the port defaults to 26379. rediss-sentinel:// speaks TLS to the sentinels
// and the master. The user and password are the master's (as in redis://); sentinels that need
// a password get theirs from --sentinel-password-file (and --sentinel-user). Throws UsageError.
Endpoint parse_sentinel_url(std::string_view url);

// "master 'mymaster' via sentinels 127.0.0.1:26379,127.0.0.1:26380"
std::string describe_sentinel(const Endpoint& endpoint);

// Asks the sentinels in turn (each gets an equal share of the time left before `deadline`) where
// the master is, and returns it as a plain endpoint with the master's user, password and db.
// Throws RedisUnavailable when none answers with an address, AuthError when a sentinel refuses
// our password, Cancelled when `cancel_fd` becomes readable.
Endpoint resolve_master(const Endpoint& endpoint, const Timeouts& timeouts, Deadline deadline,
                        int cancel_fd);

// Throws RedisUnavailable unless `role` (a ROLE reply from `master`) says master: a sentinel
// can be out of date, and writing to a replica would only ever fail with READONLY.
void check_role_is_master(const redisReply& role, const Endpoint& master, const Endpoint& endpoint);

}  // namespace redlock

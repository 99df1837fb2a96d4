-- Ends our hold on the lock, never touching someone else's.
-- KEYS[1] lock key, KEYS[2] holder-info hash, KEYS[3] waiters' queue.
-- ARGV[1] token; ARGV[2] keep_ms: 0 deletes now, >0 keeps the lock that much longer instead
-- (--min-hold, enforced by Redis's clock); ARGV[3] how long an unclaimed wake-up may linger (ms);
-- ARGV[4] the prefix of the waiters' keys (see lib/queue.lua).
-- Returns 1 released (or shortened), 0 already gone, -1 held by another token (left untouched).

local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'string' or redis.call('GET', KEYS[1]) ~= ARGV[1] then
  -- The key is no longer ours: it was lost (a restart without persistence, a failover to a
  -- replica that lacked it). A holder left the queue when it took the lock, but a queue copied
  -- from before that (the promoted replica's) can still name it, with its alive mark: the lock
  -- would stay reserved for a run that no longer waits until the mark expires. Take it out, and
  -- wake the new head: it blocked for as long as that mark had left, and must look again (at
  -- a free lock, or at a holder whose TTL is shorter).
  if redis.call('LREM', KEYS[3], 0, ARGV[1]) > 0 then
    redis.call('DEL', ARGV[4] .. ARGV[1], ARGV[4] .. ARGV[1] .. ':alive')
    wake_head(KEYS[3], ARGV[4], ARGV[3])
  end
  return kind == 'none' and 0 or -1
end
local keep = tonumber(ARGV[2])
if keep > 0 then
  redis.call('PEXPIRE', KEYS[1], keep)
  redis.call('PEXPIRE', KEYS[2], keep)
  return 1
end
redis.call('DEL', KEYS[1], KEYS[2])
-- Wake the longest-waiting run (lib/queue.lua).
wake_head(KEYS[3], ARGV[4], ARGV[3])
return 1

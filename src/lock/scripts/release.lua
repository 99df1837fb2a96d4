-- Ends our hold on the lock, never touching someone else's.
-- KEYS[1] lock key, KEYS[2] holder-info hash, KEYS[3] waiters' queue.
-- ARGV[1] token; ARGV[2] keep_ms: 0 deletes now, >0 keeps the lock that much longer instead
-- (--min-hold, enforced by Redis's clock); ARGV[3] how long an unclaimed wake-up may linger (ms);
-- ARGV[4] the prefix of the waiters' keys (see lib/queue.lua).
-- Returns 1 released (or shortened), 0 already gone, -1 held by another token (left untouched).

local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then
  return 0
end
if kind ~= 'string' or redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
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

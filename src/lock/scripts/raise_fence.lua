-- The second step of a quorum acquire (several -u): raises this node's fence counter to the fence
-- the quorum hands out, while the lock still holds our token. Done on a majority, it puts that
-- value on at least one node of every later majority, so every later holder's INCR lands above it.
-- KEYS[1] lock key, KEYS[2] fence counter, KEYS[3] holder-info hash (all in one slot).
-- ARGV[1] token, ARGV[2] the quorum's fence (decimal).
-- Returns 1 when the counter is now at least ARGV[2], 0 when the lock is not ours (unchanged).
if redis.call('TYPE', KEYS[1]).ok ~= 'string' or redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
-- Counters stay below 2^53 (Redis TIME in microseconds), so Lua's doubles compare them exactly.
local current = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
if current < tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2])
end
-- The holder info records the fence the command was given, not this node's step on the way.
if redis.call('TYPE', KEYS[3]).ok == 'hash' and redis.call('HGET', KEYS[3], 'token') == ARGV[1] then
  redis.call('HSET', KEYS[3], 'fence', ARGV[2])
end
return 1

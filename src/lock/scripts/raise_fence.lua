-- The second step of a quorum acquire (several -u): raises this node's fence counter to the fence
-- the quorum hands out, while the lock still holds our token. Done on a majority, it puts that
-- value on at least one node of every later majority, so every later holder's INCR lands above it.
-- KEYS[1] what holds the token: the lock key, or a permit's key (permits.lua), or a shared
-- holder's record (shared.lua, a hash whose 'token' field is the token, which lasts as long as
-- the hold); KEYS[2] fence counter, KEYS[3] holder-info hash (all in one slot).
-- ARGV[1] token, ARGV[2] the quorum's fence (decimal).
-- Returns 1 when the counter is now at least ARGV[2], 0 when the lock is not ours (unchanged).
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'hash' then
  if redis.call('HGET', KEYS[1], 'token') ~= ARGV[1] then return 0 end
elseif kind ~= 'string' or redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
-- Both are compared as decimal strings (length, then digits), not as Lua doubles, which are
-- exact only below 2^53. The acquire script just checked this counter; should it have changed
-- to something that is not a counter since, it is replaced, as a missing one would be.
-- ARGV[2] is below 2^62 (quorum_math.cpp), which keeps every later INCR within range.
local function below(a, b)
  return #a < #b or (#a == #b and a < b)
end
local current = redis.call('GET', KEYS[2])
if not current or not string.match(current, '^[1-9]%d*$') and current ~= '0'
    or below(current, ARGV[2]) then
  redis.call('SET', KEYS[2], ARGV[2])
end
-- The holder info records the fence the command was given, not this node's step on the way.
if redis.call('TYPE', KEYS[3]).ok == 'hash' and redis.call('HGET', KEYS[3], 'token') == ARGV[1] then
  redis.call('HSET', KEYS[3], 'fence', ARGV[2])
end
return 1

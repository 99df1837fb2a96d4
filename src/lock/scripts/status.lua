-- Reads everything the operator commands show about one lock in one atomic step, so the holder
-- info, TTL and fence shown always belong together. Read-only.
-- KEYS[1] lock key, KEYS[2] fence counter, KEYS[3] holder-info hash (all in one slot).
-- Returns {type, value, pttl, fence, now_s, now_us, info...}: type is the lock key's TYPE;
-- value (the token) is nil unless type is 'string'; pttl as PTTL (-2 absent, -1 no expiry);
-- fence is the counter's text or nil; now_* is Redis's TIME; info is the holder-info field/value
-- list when it belongs to the current token (the only case in which it can be trusted), else empty.
local kind = redis.call('TYPE', KEYS[1]).ok
local value = false
if kind == 'string' then
  value = redis.call('GET', KEYS[1])
end
local fence = false
if redis.call('TYPE', KEYS[2]).ok == 'string' then
  fence = redis.call('GET', KEYS[2])
end
local now = redis.call('TIME')
local reply = {kind, value, redis.call('PTTL', KEYS[1]), fence, now[1], now[2]}
if value and redis.call('TYPE', KEYS[3]).ok == 'hash'
    and redis.call('HGET', KEYS[3], 'token') == value then
  local info = redis.call('HGETALL', KEYS[3])
  for i = 1, #info do reply[#reply + 1] = info[i] end
end
return reply

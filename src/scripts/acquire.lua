-- Takes the lock when it is free and hands out the next fencing token, in one atomic step.
-- KEYS[1] lock key, KEYS[2] fence counter (same slot); ARGV[1] token, ARGV[2] ttl in ms.
-- Returns {1, fence} when acquired, {0, pttl-of-the-holder} when the lock is busy.
local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'none' and kind ~= 'string' then
  return redis.error_reply('WRONGTYPE the lock key holds a ' .. kind .. ', not a lock token')
end
-- Check the counter before SET: a script is not rolled back, so failing after SET would
-- leave a lock that nobody holds.
local fence_kind = redis.call('TYPE', KEYS[2]).ok
if fence_kind ~= 'none' and (fence_kind ~= 'string'
    or not string.match(redis.call('GET', KEYS[2]), '^%d+$')) then
  return redis.error_reply('WRONGTYPE the fence counter ' .. KEYS[2] .. ' is not a counter')
end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {0, redis.call('PTTL', KEYS[1])}
end
if fence_kind == 'none' then
  -- A missing counter (first use, or lost with Redis's data) restarts from Redis's clock in
  -- microseconds, so it stays above every value handed out before the loss.
  local now = redis.call('TIME')
  redis.call('SET', KEYS[2], now[1] .. string.format('%06d', tonumber(now[2])))
end
return {1, redis.call('INCR', KEYS[2])}

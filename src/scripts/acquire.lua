-- Takes the lock when it is free and hands out the next fencing token, in one atomic step.
-- KEYS[1] lock key, KEYS[2] fence counter, KEYS[3] holder-info hash, KEYS[4] waiters' queue
-- (all in one slot).
-- ARGV[1] token, ARGV[2] ttl in ms, ARGV[3] queueing when busy: '' (none), 'back' (join the
-- queue's end unless already in it) or 'front' (woken by a release but beaten to the lock: back
-- to the head), ARGV[4..] holder-info field/value pairs (may be absent).
-- Returns {1, fence} when acquired; {0, pttl, info...} when busy, where info is the holder's
-- recorded field/value list when it belongs to the current token (followed by the pseudo-field
-- 'now_ms', Redis's clock), else empty.
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
  local reply = {0, redis.call('PTTL', KEYS[1])}
  if ARGV[3] ~= '' then
    -- Joining in the same step as the failed attempt: a release between the two can't be missed.
    if not redis.call('LPOS', KEYS[4], ARGV[1]) then
      redis.call(ARGV[3] == 'front' and 'LPUSH' or 'RPUSH', KEYS[4], ARGV[1])
    end
    -- Outlives the holder's lease and then some; every waiter's retry pushes it on, so entries
    -- of waiters that died without leaving do not linger for long.
    redis.call('PEXPIRE', KEYS[4], math.max(reply[2], 0) + 2 * tonumber(ARGV[2]))
  end
  if redis.call('TYPE', KEYS[3]).ok == 'hash'
      and redis.call('HGET', KEYS[3], 'token') == redis.call('GET', KEYS[1]) then
    local info = redis.call('HGETALL', KEYS[3])
    for i = 1, #info do reply[#reply + 1] = info[i] end
    -- Not stored: Redis's clock now, so "held for 12m3s" needs no clock of ours.
    local now = redis.call('TIME')
    reply[#reply + 1] = 'now_ms'
    reply[#reply + 1] = tostring(now[1] * 1000 + math.floor(now[2] / 1000))
  end
  return reply
end
if fence_kind == 'none' then
  -- A missing counter (first use, or lost with Redis's data) restarts from Redis's clock in
  -- microseconds, so it stays above every value handed out before the loss.
  local now = redis.call('TIME')
  redis.call('SET', KEYS[2], now[1] .. string.format('%06d', tonumber(now[2])))
end
local fence = redis.call('INCR', KEYS[2])
-- A waiter that takes a free lock after a timeout is still queued: it has what it queued for.
if ARGV[3] ~= '' then
  redis.call('LREM', KEYS[4], 0, ARGV[1])
end
-- Holder info from an earlier holder is stale now, whether or not this run records its own.
redis.call('DEL', KEYS[3])
if #ARGV > 3 then
  local now = redis.call('TIME')
  local fields = {'token', ARGV[1], 'fence', fence, 'ttl_ms', ARGV[2],
                  'acquired_ms', now[1] * 1000 + math.floor(now[2] / 1000)}
  for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
  redis.call('HSET', KEYS[3], unpack(fields))
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
end
return {1, fence}

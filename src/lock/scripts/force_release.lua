-- Deletes a lock whoever holds it (release --force), reporting whose it was, in one atomic step:
-- the holder shown is the one whose lock was deleted, not a later one.
-- KEYS[1] lock key, KEYS[2] holder-info hash, KEYS[3] waiters' queue.
-- ARGV[1] how long an unclaimed wake-up may linger (ms), ARGV[2] the prefix of the waiters' keys
-- (see lib/queue.lua).
-- Returns {0} when there was no lock, else {1, token, pttl, info...} where info is the holder-info
-- field/value list when it belonged to the deleted token, else empty.

local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then
  return {0}
end
if kind ~= 'string' then
  -- Not a lock: deleting someone's hash or list by mistyping a name would be worse than refusing.
  return redis.error_reply('WRONGTYPE the lock key holds a ' .. kind .. ', not a lock token')
end
local token = redis.call('GET', KEYS[1])
local reply = {1, token, redis.call('PTTL', KEYS[1])}
if redis.call('TYPE', KEYS[2]).ok == 'hash' and redis.call('HGET', KEYS[2], 'token') == token then
  local info = redis.call('HGETALL', KEYS[2])
  for i = 1, #info do reply[#reply + 1] = info[i] end
end
redis.call('DEL', KEYS[1], KEYS[2])
-- Wake one waiter, exactly as release.lua does after a normal release.
wake_head(KEYS[3], ARGV[2], ARGV[1])
return reply

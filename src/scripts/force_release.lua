-- Deletes a lock whoever holds it (release --force), reporting whose it was, in one atomic step:
-- the holder shown is the one whose lock was deleted, not a later one.
-- KEYS[1] lock key, KEYS[2] holder-info hash, KEYS[3] waiters' queue.
-- ARGV[1] how long an unclaimed wake-up may linger (ms), ARGV[2] the prefix of the waiters' keys
-- (see acquire.lua).
-- Returns {0} when there was no lock, else {1, token, pttl, info...} where info is the holder-info
-- field/value list when it belonged to the deleted token, else empty.
-- The longest-waiting run that is still waiting (as in acquire.lua).
local function live_head()
  while true do
    local head = redis.call('LINDEX', KEYS[3], 0)
    if not head or redis.call('EXISTS', ARGV[2] .. head .. ':alive') == 1 then
      return head
    end
    redis.call('LPOP', KEYS[3])
  end
end

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
local head = live_head()
if head then
  redis.call('RPUSH', ARGV[2] .. head, '1')
  redis.call('PEXPIRE', ARGV[2] .. head, ARGV[1])
end
return reply

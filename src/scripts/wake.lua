-- A waiter leaves the queue (signal, or its wait ran out). The lock may be free and reserved for
-- it, or it may have been woken just before it left: then the next live waiter is woken instead,
-- or it would sleep until its own bound ran out.
-- KEYS[1] lock key, KEYS[2] waiters' queue; ARGV[1] how long a wake-up may linger (ms),
-- ARGV[2] the prefix of the waiters' keys (see acquire.lua), ARGV[3] the leaving waiter's token.
-- The longest-waiting run that is still waiting (as in acquire.lua).
local function live_head()
  while true do
    local head = redis.call('LINDEX', KEYS[2], 0)
    if not head or redis.call('EXISTS', ARGV[2] .. head .. ':alive') == 1 then
      return head
    end
    redis.call('LPOP', KEYS[2])
  end
end

redis.call('LREM', KEYS[2], 0, ARGV[3])
redis.call('DEL', ARGV[2] .. ARGV[3], ARGV[2] .. ARGV[3] .. ':alive')
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local head = live_head()
if not head then
  return 0
end
redis.call('RPUSH', ARGV[2] .. head, '1')
redis.call('PEXPIRE', ARGV[2] .. head, ARGV[1])
return 1

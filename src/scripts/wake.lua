-- A waiter leaves the queue (signal, or its wait ran out). It may have been woken just before it
-- left: when the lock is free, the wake-up is handed on to the next in line, or that waiter would
-- sleep until its own bound ran out.
-- KEYS[1] lock key, KEYS[2] waiters' queue; ARGV[1] how long a wake-up may linger (ms),
-- ARGV[2] the wake-up lists' prefix, ARGV[3] the leaving waiter's token.
redis.call('LREM', KEYS[2], 0, ARGV[3])
redis.call('DEL', ARGV[2] .. ARGV[3])
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local next = redis.call('LPOP', KEYS[2])
if not next then
  return 0
end
redis.call('RPUSH', ARGV[2] .. next, '1')
redis.call('PEXPIRE', ARGV[2] .. next, ARGV[1])
return 1

-- A waiter leaves the queue (signal, or its wait ran out). The lock may be free and reserved for
-- it, or it may have been woken just before it left: then the next live waiter is woken instead,
-- or it would sleep until its own bound ran out.
-- KEYS[1] lock key, KEYS[2] waiters' queue; ARGV[1] how long a wake-up may linger (ms),
-- ARGV[2] the prefix of the waiters' keys (see lib/queue.lua), ARGV[3] the leaving waiter's token.
-- Returns 1 when it woke the next waiter, else 0.

redis.call('LREM', KEYS[2], 0, ARGV[3])
redis.call('DEL', ARGV[2] .. ARGV[3], ARGV[2] .. ARGV[3] .. ':alive')
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
return wake_head(KEYS[2], ARGV[2], ARGV[1]) and 1 or 0

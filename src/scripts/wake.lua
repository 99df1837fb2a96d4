-- Passes a wake-up on to the next waiter when the lock is free. A waiter that gives up (signal)
-- may have consumed the wake-up meant for the hand-off; without this the next waiter would sleep
-- until its own bound ran out.
-- KEYS[1] lock key, KEYS[2] wake-up list; ARGV[1] how long the wake-up may linger (ms).
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('DEL', KEYS[2])
redis.call('RPUSH', KEYS[2], '1')
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1

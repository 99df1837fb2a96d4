-- The waiters' queue, shared by every script that touches it: prepended to acquire, release,
-- wake and force_release at build time, since scripts sent to Redis cannot share code.
-- A waiter is its token in the queue list plus prefix .. token .. ':alive' (it is still waiting)
-- and prefix .. token (its wake-up list); the prefix carries the lock's hash tag.

-- The longest-waiting run that is still waiting; entries of waiters that died without leaving
-- (their ':alive' mark expired) are dropped on the way.
local function live_head(queue, prefix)
  while true do
    local head = redis.call('LINDEX', queue, 0)
    if not head or redis.call('EXISTS', prefix .. head .. ':alive') == 1 then
      return head
    end
    redis.call('LPOP', queue)
  end
end

-- Wakes exactly one waiter, the live head, with one element on its wake-up list. It stays at
-- the head, and so keeps a free lock reserved, until it has taken the lock. Returns the head.
local function wake_head(queue, prefix, linger_ms)
  local head = live_head(queue, prefix)
  if head then
    redis.call('RPUSH', prefix .. head, '1')
    redis.call('PEXPIRE', prefix .. head, linger_ms)
  end
  return head
end


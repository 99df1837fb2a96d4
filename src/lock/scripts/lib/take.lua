-- Taking a free lock, the one code path for it: acquire.lua calls it when the lock is free for
-- this run, and a release that hands the lock straight to the queue's head (issue 35) is to call
-- it with the head's own arguments, so that a hand-off writes exactly what the head's acquire
-- would. Prepended after lib/queue.lua (next_fence) and lib/abandoned.lua (abandoned_entry,
-- record_abandoned).

-- Takes lock `key` for `token` for `px` ms and returns its new fence (a decimal string). `info`
-- is the holder-info hash, `ledger` the run ledger, `fence_key` the fence counter (checked by the
-- caller: check_fence_counter); `queue`/`prefix`: when `queue` is given the run was a waiter and
-- leaves the queue (its wake-up list, ':alive' and ':who' go). `ttl_ms` is what the record says
-- of the TTL; `now` Redis's clock in ms. The holder-info field/value pairs are args[from..]
-- (none: no record is written, and an earlier holder's is deleted all the same). `floor`, when
-- given, is a quorum hand-off's: the fence is fence_from's, not next_fence's (hand_off_head).
-- `acquire_floor`: a quorum acquire's fence floor (next_fence, lib/queue.lua), or nil.
-- A quorum hand-off's fence on this node (fence_from, lib/queue.lua): one above both the counter
-- and `floor` (a decimal string without leading zeros: the releasing holder's quorum fence, '0'
-- when not known), and not raised to this node's clock as next_fence is. The waiter starts at
-- once only when a majority of nodes handed it the same fence (QuorumTarget, quorum_wait.cpp):
-- nodes that each follow their own clock in microseconds never agree, whereas counters that the
-- last holder raised to its fence (raise_fence.lua), or that its own hand-off left equal, all
-- step to that fence + 1.
-- The floor keeps the step above the holder's fence on a node whose counter fell behind it (a
-- restart from a snapshot taken between its acquire and its fence step).
local function take_lock(key, fence_key, info, ledger, queue, prefix, token, px, ttl_ms, now,
                         args, from, floor, acquire_floor)
  -- The previous holder's record, when it is still there and marked, is that of a run whose end
  -- was never recorded (lib/abandoned.lua): it goes into the ledger as abandoned before this run
  -- replaces the record (not our own: an earlier attempt of this run whose reply was lost). Paid
  -- only here, where the lock is taken: one HMGET, of a hash that is normally gone (a finished
  -- run deleted it).
  local lost_entry, lost_size = abandoned_entry(info, token, now)
  if lost_entry then record_abandoned(ledger, lost_entry, lost_size) end

  redis.call('SET', key, token, 'PX', px)
  if queue then
    queue_remove(queue, token)
    redis.call('DEL', prefix .. token, prefix .. token .. ':alive', prefix .. token .. ':who',
               prefix .. token .. ':take')
  end
  -- Never below this master's clock in microseconds (next_fence, lib/queue.lua).
  local fence = floor and fence_from(fence_key, floor) or next_fence(fence_key, acquire_floor)
  -- Holder info from an earlier holder is stale now, whether or not this run records its own.
  redis.call('DEL', info)
  if #args >= from then
    local marked = write_record(info, {'token', token, 'fence', fence, 'ttl_ms', ttl_ms,
                                       'acquired_ms', now}, args, from)
    -- A run with a ledger marks its record, which then outlives the lease (lib/abandoned.lua):
    -- should the run and its watchdog die, it is what tells of the run. Its end takes it away.
    if not marked then redis.call('PEXPIRE', info, px) end
  end
  return fence
end

-- ---- the hand-off (issue 35) ----
-- A release that frees the lock hands it straight to the live head of the queue when that head
-- asked for it (a plain waiter: acquire.lua's 'handoff:C', or a quorum's 'ticket:T:handoff:C',
-- stored its TTL, its claim window C and its holder info in prefix .. head .. ':take'): the
-- head's own take, in the same atomic step as the release, and its wake-up carries the result,
-- 'handoff:<fence>', so that the waiter can start its command when the wake-up arrives, one round
-- trip after the holder's command ended instead of two. Safety:
-- - The key is set for the claim window C only, not the TTL: a head that died (or is paused)
--   holds the lock no longer than C. The waiter extends it to its TTL with its first renewal.
-- - The waiter does not know when this ran, only that it ran after the last command of its
--   own whose reply showed its wake-up list empty (its busy acquire, which empties the list, or
--   a BLPOP that timed out): its lease counts from that command's send time L, for C, and it
--   starts at once only when enough of that is left (waiter.cpp); otherwise it confirms with an
--   acquire (which finds its own token: the `mine` path) as before.
-- - Fences: take_lock draws the next fence exactly as the head's acquire would.
-- - FIFO: only the live head is handed the lock, as only it would have been woken.
-- - A quorum's queue (a sorted set): each node hands the lock to its head as one node does, but
--   with fence_from's fence (`floor`: the releasing holder's fence, from its holder record); the
--   waiter starts only on a majority of hand-offs, and raises their fences when they differ
--   (QuorumTarget, quorum_wait.cpp, makes the argument).
-- Anything else (a head that did not ask, a fence counter that is missing or unusable, where the
-- head's own acquire decides: the restart guard, the error) falls back to
-- the plain wake-up, '1', and the head's acquire. A waiter of an older version never asks; an
-- older waiter that got a payload it does not know acquires as after '1', and finds its token.
local function hand_off_head(key, fence_key, info, ledger, queue, prefix, linger_ms, floor)
  local head = live_head(queue, prefix)
  if not head then return end
  local args = take_args(prefix, head)
  if args then
    local kind = check_fence_counter(fence_key)
    if kind == 'string' then
      local t = redis.call('TIME')
      local now = t[1] * 1000 + math.floor(t[2] / 1000)
      local fence = take_lock(key, fence_key, info, ledger, queue, prefix, head, args[2], args[1],
                              now, args, 3, queue_is_ordered(queue) and (floor or '0') or nil)
      redis.call('RPUSH', prefix .. head, 'handoff:' .. fence)
      redis.call('PEXPIRE', prefix .. head, linger_ms)
      -- The next live waiter blocked for as long as the old holder's TTL had left; should the
      -- head have died, the lock is free again after the claim window, long before that. So it
      -- looks again now (a plain wake-up): its acquire finds the handed key and blocks for what
      -- is left of the claim, then finds the head's renewed TTL, or takes a lock whose claim
      -- lapsed.
      local next = live_head(queue, prefix)
      if next then wake_once(prefix, next, linger_ms) end
      return
    end
  end
  wake_head(queue, prefix, linger_ms)
end

-- The releasing holder `token`'s fence, from its record (`info`), read before release_lock
-- deletes the record: a quorum hand-off's floor (fence_from); nil when the record is not its own
-- or its fence not a plain decimal below the limit.
local function release_floor(info, token)
  local own = redis.pcall('HMGET', info, 'token', 'fence')
  if token and type(own) == 'table' and not own.err and own[1] == token
      and type(own[2]) == 'string' and #own[2] <= 18 and string.match(own[2], '^[1-9]%d*$') then
    return own[2]
  end
  return nil
end

-- What a release passes release_lock to wake the queue with: the hand-off above, or nil (a plain
-- wake-up) when its caller gave no fence counter or ledger key (a caller of an older version).
local function hand_on_with(key, fence_key, info, ledger, token)
  if not fence_key or not ledger then return nil end
  local floor = release_floor(info, token)
  return function(queue, prefix, linger_ms)
    hand_off_head(key, fence_key, info, ledger, queue, prefix, linger_ms, floor)
  end
end

-- Joining the shared hold (--shared), the one code path for it: shared.lua's acquire calls it,
-- and a release that frees the lock hands the shared hold to the readers at the queue's head
-- through it (issue 35), so that a hand-off writes exactly what each reader's acquire would.
-- Prepended after lib/queue.lua, lib/open_runs.lua (record_open) and lib/take.lua (hand_off_head),
-- to shared.lua and to the plain release (release.lua, ledger.lua), which may free a lock that
-- readers wait for. The data model is shared.lua's: the lock key holds the marker, `holders` is
-- the sorted set of holders by the end of their hold, holders .. ':' .. token each one's record.

-- The hold of shared holder `token` now ends `ms` (a number) from `now`: its score, its record
-- (unless that has no expiry: a run with a ledger, lib/abandoned.lua; `marked` says whether it is
-- such a one when the caller knows, nil: look), and the marker and the set if they end sooner.
local function share_extend(key, holders, token, ms, now, marked)
  local record = holders .. ':' .. token
  redis.call('ZADD', holders, now + ms, token)
  if marked == nil then marked = redis.call('PTTL', record) == -1 end
  if not marked then redis.call('PEXPIRE', record, ms) end
  for _, k in ipairs({key, holders}) do
    -- -1: a holders set just created by ZADD, which must not outlive its holders.
    local pttl = redis.call('PTTL', k)
    if pttl ~= -2 and pttl < ms then redis.call('PEXPIRE', k, ms) end
  end
end

-- Admits `token` as a shared holder for `px` ms and returns its new fence (a decimal string).
-- `free`: nobody holds the lock (the marker is written, after the ledger has recorded every run
-- the set of open runs `open` names: they died without a trace, as acquire.lua judges for a
-- plain lock). `ttl` is what the record says of the TTL, `now` Redis's clock in ms, the
-- holder-info field/value pairs args[from..]. The run leaves the queue (its wake-up list,
-- ':alive', ':who' and ':take' go).
local function take_shared(key, fence_key, holders, open, ledger, queue, prefix, token, px, ttl,
                           now, free, args, from)
  if free then
    record_open(open, ledger, now, token)
    redis.call('SET', key, 'redlock-shared', 'PX', px)
  end
  queue_remove(queue, token)
  redis.call('DEL', prefix .. token, prefix .. token .. ':alive', prefix .. token .. ':who',
             prefix .. token .. ':take')
  -- Never below this master's clock in microseconds, as with a plain lock.
  local fence = next_fence_ahead(fence_key)
  local record = holders .. ':' .. token
  redis.call('DEL', record)
  local marked = write_record(record, {'token', token, 'fence', fence, 'ttl_ms', ttl,
                                       'acquired_ms', now}, args, from)
  -- A run with a ledger marks its record, which then outlives the hold until the run's end is
  -- recorded, and names it in the set of open runs (lib/open_runs.lua), instead of its PEXPIRE.
  if marked then redis.call('SADD', open, record) end
  share_extend(key, holders, token, tonumber(px), now, marked)
  return fence
end

-- ---- the hand-off (issue 35), as hand_off_head (lib/take.lua) does for a writer ----
-- The lock just became free (a writer's release, or the last reader's) and the queue's live head
-- is a reader: every live reader at the head, up to the first writer (whom the queue's writer
-- preference keeps them from passing), is admitted, as wake_admissible would wake them all. Each
-- one that asked for a hand-off (take_note's 'shared:C') is admitted here, in queue order, as its
-- own acquire would admit it (take_shared: the marker, its fence, its record), for its claim
-- window C, and its wake-up says 'handoff:<fence>'; the others get the plain wake-up and
-- acquire. The safety argument is hand_off_head's: a reader that died holds its share for C, not
-- its TTL (and keeps only the writers out, as a live reader would), and one that gets the
-- wake-up late confirms with an acquire, which finds its hold. The writer behind them blocked for
-- as long as the old holder had left, longer than C: it looks again. With a fence counter that
-- is missing (the restart guard judges) or unusable, every reader is only woken.
local function hand_readers(key, fence_key, holders, open, ledger, queue, prefix, linger_ms)
  local can = check_fence_counter(fence_key) == 'string'
  local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  local free, i, handed = true, 0, false
  while true do
    local w = queue_at(queue, i)
    if not w then return end
    local mode = redis.call('GET', prefix .. w .. ':alive')
    if not mode then
      queue_remove(queue, w)
    elseif mode ~= 'shared' then
      if handed then wake_once(prefix, w, linger_ms) end
      return
    else
      local args = can and take_args(prefix, w, true)
      if args then
        -- (It leaves the queue: the next entry is now at i.)
        local fence = take_shared(key, fence_key, holders, open, ledger, queue, prefix, w, args[2],
                                  args[1], now, free, args, 3)
        free, handed = false, true
        redis.call('RPUSH', prefix .. w, 'handoff:' .. fence)
      else
        if redis.call('LLEN', prefix .. w) == 0 then redis.call('RPUSH', prefix .. w, '1') end
        i = i + 1
      end
      redis.call('PEXPIRE', prefix .. w, linger_ms)
    end
  end
end

-- What a release that freed the lock does for the queue: a writer at the head is handed the
-- lock (hand_off_head), readers the shared hold (hand_readers). `info` is the plain lock's
-- holder-info hash, `ledger` the run ledger, `floor` a quorum hand-off's (release_floor, or nil).
local function hand_free_lock(key, fence_key, info, ledger, holders, open, queue, prefix,
                              linger_ms, floor)
  local head = live_head(queue, prefix)
  if not head then return end
  if redis.call('GET', prefix .. head .. ':alive') == 'shared' then
    hand_readers(key, fence_key, holders, open, ledger, queue, prefix, linger_ms)
  else
    hand_off_head(key, fence_key, info, ledger, queue, prefix, linger_ms, floor)
  end
end

-- release_lock's `hand_on` for a plain release that names the shared holders' keys too (a caller
-- of an older version does not: hand_on_with, lib/take.lua).
-- `token`: the releasing holder, whose fence is a quorum hand-off's floor (release_floor).
local function hand_on_free(key, fence_key, info, ledger, holders, open, token)
  if not holders or not open then return hand_on_with(key, fence_key, info, ledger, token) end
  local floor = release_floor(info, token)
  return function(queue, prefix, linger_ms)
    hand_free_lock(key, fence_key, info, ledger, holders, open, queue, prefix, linger_ms, floor)
  end
end

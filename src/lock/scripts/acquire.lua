-- Takes the lock when it is free and hands out the next fencing token, in one atomic step.
-- KEYS[1] lock key, KEYS[2] fence counter, KEYS[3] holder-info hash, KEYS[4] waiters' queue,
-- KEYS[5] run ledger (all in one slot).
-- ARGV[1] token, ARGV[2] ttl in ms, ARGV[3] '' when this run does not wait, '1' when it joins
-- the queue's end when busy, 'handoff:C' when it joins the queue's end and accepts the lock
-- handed over by a release for a claim window of C ms (lib/take.lua), 'ticket:T' when it joins
-- the queue at ticket T (a quorum waiter, see lib/queue.lua), 'ticket:T:handoff:C' both (a
-- quorum waiter that accepts a hand-off on this node); ARGV[4] the prefix of the waiters' keys (prefix .. token is a waiter's wake-up list,
-- prefix .. token .. ':alive' says it is still waiting; the prefix carries the lock's hash tag);
-- ARGV[5] how long a waiter's ':alive' outlasts its next retry (ms); ARGV[6] how long a waiter
-- blocks when the holder's key has no TTL (ms); ARGV[7] --once-per as 'period_ms:offset_ms', or
-- '' (then KEYS[6] is the once-per record, see the block below); ARGV[8] '1' when a busy reply
-- is to carry the holder's info, '' when the caller will not show it; ARGV[9] the restart guard
-- in ms ('' or '0': none; see restart_guard_left in lib/queue.lua); ARGV[10] a quorum's fence
-- floor ('' none; next_fence in lib/queue.lua); ARGV[11..] holder-info field/value pairs.
-- Returns {1, fence} (a decimal string) when acquired, {1, fence, 'slot', slot} with --once-per;
-- {0, pttl, info...} when busy, where pttl bounds the caller's
-- wait and info is the holder's recorded field/value list when it belongs to the current token
-- and ARGV[8] asks for it (followed by the pseudo-field 'now_ms', Redis's clock), or the
-- pseudo-field 'shared' '1' when shared holders (shared.lua) hold it and ARGV[8] asks, else empty;
-- with --once-per,
-- {2, slot, record...} when the lock was free but this slot's run is already done (not taken),
-- or may have been done before Redis lost its data ({2, slot, 'restart_s', uptime}); and
-- {3, left_ms, uptime_s} when the lock is free but held back by the restart guard.
local token, waits, prefix = ARGV[1], ARGV[3] ~= '', ARGV[4]
-- (Parsed only when there is something to parse: each step below is paid by every attempt.)
local ticket, claim = nil, nil
if waits then
  ticket, claim = string.match(ARGV[3], '^ticket:(%d+):handoff:(%d+)$')
  if not ticket then
    ticket = string.match(ARGV[3], '^ticket:(%d+)$')
    claim = not ticket and string.match(ARGV[3], '^handoff:(%d+)$')
  end
end
local want_holder = ARGV[8] == '1'
-- Below the limit of fences (2^62, 19 digits) by its length: a floor of 18 digits or fewer can
-- neither reach it nor, raised by one, pass it. Anything else is no floor.
local fence_floor = ARGV[10] ~= '' and #ARGV[10] <= 18 and string.match(ARGV[10], '^[1-9]%d*$')
  or nil

-- Redis's clock in ms, read once per call: the once-per slot, the holder's acquired_ms and a
-- busy reply's now_ms are all "now" for this one atomic step.
local clock_ms = nil
local function now_ms()
  if not clock_ms then
    local t = redis.call('TIME')
    clock_ms = t[1] * 1000 + math.floor(t[2] / 1000)
  end
  return clock_ms
end

-- ---- --once-per (KEYS[6], ARGV[7]): the slot, by this node's clock ----
-- The run belongs to the slot floor((TIME - offset) / period) of the node that takes the lock,
-- read in the acquire itself, so that no round trip comes between the acquire and the command.
-- In integers: fmod is exact on doubles, whereas a quotient rounded up by the division could
-- land in the next slot. Computed once per call (the skip check and the reply agree).
local once_period, once_offset = nil, nil
if (ARGV[7] or '') ~= '' then once_period, once_offset = string.match(ARGV[7], '^(%d+):(%d+)$') end
local once_cached, once_start = nil, nil
local function once_slot()
  if not once_period then return nil end
  if not once_cached then
    local since = now_ms() - tonumber(once_offset)
    local period = tonumber(once_period)
    local r = math.fmod(since, period)
    if r < 0 then r = r + period end
    once_cached = string.format('%d', (since - r) / period)
    once_start = since - r + tonumber(once_offset)  -- when the slot began, in ms
  end
  return once_cached
end
-- An acquire that took the lock answers with its fence and, with --once-per, its slot.
local function acquired(fence)
  local slot = once_slot()
  if slot then return {1, fence, 'slot', slot} end
  return {1, fence}
end
-- ---- end of --once-per ----

-- Every call below is one a run pays for: at the top of the minute a fleet's cron jobs send a
-- herd of attempts, almost all of which find the lock held, and each free acquire is a run
-- (issue 21: Redis CPU per attempt is what bounds the herd). So one call tells as much as it
-- can. GET under pcall tells the key's type and value at once: a string, false when there is no
-- key, an error table for a key of another type (only then TYPE, for the message).
local held = redis.pcall('GET', KEYS[1])
local kind = 'none'
if type(held) == 'string' then
  kind = 'string'
elseif held then
  kind = redis.call('TYPE', KEYS[1]).ok
  if kind == 'none' or kind == 'string' then return held end  -- not WRONGTYPE: as it is
  return redis.error_reply('WRONGTYPE the lock key holds a ' .. kind .. ', not a lock token')
end
-- Held by --permits N > 1 runs (permits.lua): a mistake in the options to report, not a wait.
if kind == 'string' and string.sub(held, 1, 16) == 'redlock-permits/' then
  return redis.error_reply('PERMITS is held with --permits ' .. string.sub(held, 17) ..
                           ', not 1; every holder of a name must give the same --permits')
end
-- Checked before anything is written. The usual counter (no more than 18 digits: clock-based
-- fences have 16, and any such decimal is far below the limit) is judged from one GET; anything
-- else (none aside) goes to check_fence_counter (in the prelude), which decides and words the
-- error: the fast test accepts only what it accepts too.
local counter = redis.pcall('GET', KEYS[2])
local fence_kind = 'string'
if counter == false then
  fence_kind = 'none'
elseif type(counter) ~= 'string' or #counter > 18 or not string.find(counter, '^[1-9]%d*$') then
  local fence_error
  fence_kind, fence_error = check_fence_counter(KEYS[2])
  if fence_error then return fence_error end
end

-- Our own token already there: an earlier attempt of this run (same token) took the lock, but its
-- reply was lost (a timeout, a reset connection) and the caller sent the acquire again. That is
-- ours, and it keeps the fence that attempt drew: nobody can have drawn one since, because the
-- counter only moves when a free key is taken and our key has stood ever since. The TTL restarts
-- from this attempt, whose send time starts the caller's lease. (Should the counter have gone
-- meanwhile, the lock is taken again below, which restarts the counter.)
local mine = held == token
if mine and fence_kind ~= 'none' then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  -- (A record marked for the ledger keeps no expiry: lib/abandoned.lua.)
  if redis.call('TYPE', KEYS[3]).ok == 'hash' and redis.call('HGET', KEYS[3], 'token') == token
      and redis.call('HEXISTS', KEYS[3], 'ledger') == 0 then
    redis.call('PEXPIRE', KEYS[3], ARGV[2])
  end
  -- A waiter's wake-up list: a hand-off (lib/take.lua) may have left its wake-up there before
  -- this attempt (a re-send after a lost reply, a late wake-up's confirm) found the lock ours,
  -- and no BLPOP will take it now.
  if waits then redis.call('DEL', prefix .. token) end
  -- The counter as the string GET gave: Lua's numbers are doubles, exact only below 2^53.
  -- (With --once-per the slot was checked by that attempt, and none can have been completed
  -- since: completing one takes the lock, and ours has stood ever since.)
  return acquired(counter)
end

-- A free lock goes to the head of the queue when there is one: a waiter stays queued until it
-- holds the lock, so nobody (a waiter retrying after a timeout, a run without --wait) can slip
-- in between a release and the woken head's acquire. One LINDEX under pcall says "no queue" for
-- a list that is empty or absent (false); a head, or an error (a quorum's sorted set, or a key of
-- another type, whose error live_head raises as before), goes to live_head.
local head = nil
if kind == 'none' then
  head = redis.pcall('LINDEX', KEYS[4], 0)
  if head then head = live_head(KEYS[4], prefix) end
end
-- ---- the restart guard (restart_guard_left, lib/queue.lua) ----
-- Only where the lock would be taken and the fence counter is missing: a new name, or lost
-- data. (Our own key with a missing counter is taken again below, so it is judged too.)
local guard_left, uptime = nil, nil
if kind == 'none' or mine then
  if fence_kind == 'none' and (not head or head == token) then
    guard_left, uptime = restart_guard_left(ARGV[9])
    -- With --once-per a slot that began before the restart is skipped below at once (its run
    -- may be among what was lost), rather than held back first.
    if guard_left and once_slot() and once_start < now_ms() - (uptime - 1) * 1000 then
      guard_left = nil
    end
  end
end
if (kind ~= 'none' and not mine) or (head and head ~= token) or guard_left then
  local reply
  if guard_left then
    reply = {3, guard_left, uptime}
  elseif kind ~= 'none' then
    reply = {0, redis.call('PTTL', KEYS[1])}
  else
    -- Reserved for the head: wait no longer than the head could still be alive.
    reply = {0, redis.call('PTTL', prefix .. head .. ':alive')}
  end
  if waits then
    queue_join(KEYS[4], token, ticket)
    local block = reply[2] >= 0 and reply[2] or tonumber(ARGV[6])
    redis.call('SET', prefix .. token .. ':alive', '1', 'PX', block + tonumber(ARGV[5]))
    waiter_note(prefix, token, 11, block + tonumber(ARGV[5]))
    -- What a release needs to take the lock for us (hand_off_head, lib/take.lua).
    if claim then take_note(prefix, token, ARGV[2], claim, 11, block + tonumber(ARGV[5])) end
    redis.call('PEXPIRE', KEYS[4], block + 2 * tonumber(ARGV[5]) + tonumber(ARGV[2]))
  end
  -- The holder's info, when it belongs to the current token and the caller will show it
  -- (ARGV[8]; a run that prints nothing, -q without --wait, asks for {0, pttl} alone). HGETALL
  -- of a hash that is not there, or of another type (an error table), yields no pairs.
  -- Held by shared holders (shared.lua's marker): no one holder to name; the pseudo-field
  -- 'shared' says so, and the caller reads the holders (they live in keys of their own).
  if want_holder and held == 'redlock-shared' then
    reply[#reply + 1] = 'shared'
    reply[#reply + 1] = '1'
  elseif want_holder and kind ~= 'none' and not guard_left then
    local info = redis.pcall('HGETALL', KEYS[3])
    for i = 1, #info, 2 do
      if info[i] == 'token' then
        if info[i + 1] == held then
          for j = 1, #info do reply[#reply + 1] = info[j] end
          -- Not stored: Redis's clock now, so "held for 12m3s" needs no clock of ours.
          reply[#reply + 1] = 'now_ms'
          reply[#reply + 1] = tostring(now_ms())
        end
        break
      end
    end
  end
  return reply
end

-- ---- --once-per: a slot whose run is already done is not run again ----
-- Checked only where the lock would be taken: a busy lock answers busy as without --once-per
-- (a waiter that gets the lock after the slot's run finished skips here). The record is written
-- by the run that completed the slot, in the same step as its release (ledger.lua).
if once_slot() then
  -- HMGET under pcall: the slot done and when it began (strings, or false: no record, or an
  -- older record without start_ms), or an error table for a record of another type (only then
  -- TYPE, for the message).
  local rec = redis.pcall('HMGET', KEYS[6], 'slot', 'start_ms')
  if rec.err then
    local kind = redis.call('TYPE', KEYS[6]).ok
    return redis.error_reply('WRONGTYPE the once-per record ' .. KEYS[6] .. ' holds a ' .. kind)
  end
  -- Done when the recorded slot began no earlier than ours, not only when it is ours: a record
  -- ahead of this slot (this node's clock stepped back, or a failover to a replica whose clock
  -- is behind) means the job already ran at a time this clock has yet to reach, and running it
  -- again until that record expires would run it once per attempt. Compared by start times,
  -- which mean the same whatever the period: a run of a shorter period within our slot used it
  -- up, a run of a longer period whose slot began before ours did not (slot numbers of two
  -- periods do not compare). A record without start_ms is of the same period (written before
  -- start_ms was).
  local done_slot, done_start = tonumber(rec[1] or ''), tonumber(rec[2] or '')
  local done
  if done_start then
    done = done_start >= once_start
  else
    done = done_slot ~= nil and done_slot >= tonumber(once_slot())
  end
  -- The restart guard's share (lib/queue.lua): no record and no fence counter, on a server
  -- that (re)started after this slot began. Its run may have been done before the data was
  -- lost, and at most one run per slot is the promise: skipped, like a done slot. A new name on
  -- a server younger than the slot is skipped too, until the next slot (the man page says so).
  local lost_uptime = nil
  if not done and not rec[1] and fence_kind == 'none' and (tonumber(ARGV[9] or '') or 0) > 0 then
    local up = server_uptime()
    if up and once_start < now_ms() - (up - 1) * 1000 then
      done, lost_uptime = true, up
    end
  end
  if done then
    -- Not taken. Our key, when an earlier attempt's lost reply had taken it, goes; a waiter
    -- leaves the queue and the free lock goes on to the next one, who decides for itself (the
    -- wake-up lingers as long as a waiter's mark outlasts its retry).
    if mine then redis.call('DEL', KEYS[1], KEYS[3]) end
    if waits then
      queue_remove(KEYS[4], token)
      redis.call('DEL', prefix .. token, prefix .. token .. ':alive', prefix .. token .. ':who',
                 prefix .. token .. ':take')
      wake_head(KEYS[4], prefix, ARGV[5])
    end
    local reply = {2, once_slot()}
    if lost_uptime then
      reply[3], reply[4] = 'restart_s', lost_uptime
      return reply
    end
    local record = redis.call('HGETALL', KEYS[6])
    for i = 1, #record do reply[#reply + 1] = record[i] end
    return reply
  end
end
-- ---- end of --once-per ----

-- Taken (lib/take.lua, the one code path that takes a lock): the record of an abandoned earlier
-- run, the key, the queue left, the fence, the holder info.
local fence = take_lock(KEYS[1], KEYS[2], KEYS[3], KEYS[5], waits and KEYS[4] or nil, prefix,
                        token, ARGV[2], ARGV[2], now_ms(), ARGV, 11, nil, fence_floor)
return acquired(fence)

-- Shared holders (--shared): any number of shared holders of one name together, and no exclusive
-- holder (a plain lock: redlock-run without --shared, redis-py's Lock, SET NX PX) beside them.
-- One script with one entry per operation, as permits.lua; lib/queue.lua, lib/ledger.lua,
-- lib/abandoned.lua, lib/open_runs.lua, lib/take.lua and lib/share.lua are prepended.
--
-- Data model, all in the lock's slot:
--   lock key        'redlock-shared': the marker that keeps every exclusive holder out (their
--                   SET NX fails on it) while shared holders are in. Its TTL is stretched to
--                   cover every holder, so it ends with the last one.
--   holders (zset)  member: a holder's token; score: when its hold ends, in ms by Redis's clock.
--                   A holder that dies is dropped once its score has passed, without help.
--   H .. token      the holder's record (a hash, same end): token, fence, ttl_ms, acquired_ms
--                   and its holder info; that of a run with a ledger without expiry, until its
--                   end is recorded, and named in the set of open runs meanwhile
--                   (lib/abandoned.lua): should the run die with its watchdog, it tells of it.
--   fence counter   shared with the exclusive holders: every fence is above every earlier one, so
--                   an exclusive holder's fence is above every shared holder's admitted before it.
--   waiters' queue  shared with exclusive waiters (acquire.lua): a list in arrival order, or for a
--                   quorum's waiters a sorted set by ticket (lib/queue.lua); a shared waiter's
--                   ':alive' mark is 'shared'. A shared run enters a free or shared-held lock unless a live
--                   exclusive waiter is queued ahead of it (writer preference).
-- Deleting the lock key by hand ends every shared hold (renewals fail, the next acquire clears
-- the holders).
--
-- KEYS[1] lock key, KEYS[2] fence counter, KEYS[3] waiters' queue, KEYS[4] holders, KEYS[5] the
-- run ledger, KEYS[6] the once-per record, KEYS[7] the set of open runs (lib/open_runs.lua),
-- KEYS[8] the plain lock's holder-info hash (a release may hand the lock to a waiting writer).
-- ARGV[1] operation, ARGV[2] H (the holder records' key prefix, with the lock's hash tag),
-- ARGV[3] the waiters' key prefix (see lib/queue.lua), ARGV[4] how long an unclaimed wake-up may
-- linger (ms); the operation's own arguments from ARGV[5] on (see each one below).

local op, H, wprefix, linger = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local MARK = 'redlock-shared'

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The lock key's TYPE and whether it holds the shared marker.
local function recorded()
  local kind = redis.call('TYPE', KEYS[1]).ok
  return kind, kind == 'string' and redis.call('GET', KEYS[1]) == MARK
end

-- Drops the holders whose hold has ended; returns how many are left and the latest end (ms).
local function live(now)
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  local n = redis.call('ZCARD', KEYS[4])
  local last = 0
  if n > 0 then last = tonumber(redis.call('ZRANGE', KEYS[4], -1, -1, 'WITHSCORES')[2]) end
  return n, last
end

-- The marker and the holders last as long as the latest holder, and no longer; with none left
-- the lock is free, and the waiters that can now enter are woken, or (`hand`: a release, which
-- hands a free lock on, lib/share.lua) handed it.
local function refit(now, hand)
  local n, last = live(now)
  if n == 0 then
    redis.call('DEL', KEYS[1], KEYS[4])
    if hand and KEYS[8] then
      hand_free_lock(KEYS[1], KEYS[2], KEYS[8], KEYS[5], KEYS[4], KEYS[7], KEYS[3], wprefix, linger)
    else
      wake_admissible(KEYS[3], wprefix, linger, true)
    end
  else
    redis.call('PEXPIRE', KEYS[1], last - now)
    redis.call('PEXPIRE', KEYS[4], last - now)
  end
  return n
end

-- A holder's hold now ends `ms` from `now` (share_extend, lib/share.lua: H is KEYS[4] .. ':').
local function extend(token, ms, now, marked)
  share_extend(KEYS[1], KEYS[4], token, ms, now, marked)
end

-- Whether `token` holds the lock shared right now.
local function holding(token, now)
  local _, shared = recorded()
  if not shared then return false end
  local ends = redis.call('ZSCORE', KEYS[4], token)
  return ends ~= false and tonumber(ends) > now
end

-- Whether shared `token` may enter a free or shared-held lock: yes unless a live exclusive waiter
-- is queued ahead of it; else also that waiter. Entries of dead waiters are dropped on the way.
local function admitted(token)
  local i = 0
  while true do
    local w = queue_at(KEYS[3], i)
    if not w or w == token then return true, nil end
    local mode = redis.call('GET', wprefix .. w .. ':alive')
    if not mode then
      queue_remove(KEYS[3], w)
    elseif mode ~= 'shared' then
      return false, w
    else
      i = i + 1
    end
  end
end

-- {0, token, pttl, {record field/value...}} for every live holder, the first to end first: the
-- layout of permits.lua's holders with no permit number, so that one parser reads both. Reads
-- only: status must not write.
local function holders(now)
  local out = {}
  local members = redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. now, '+inf', 'WITHSCORES')
  for k = 1, #members, 2 do
    local token = members[k]
    local info = {}
    if redis.call('TYPE', H .. token).ok == 'hash' then info = redis.call('HGETALL', H .. token) end
    out[#out + 1] = {0, token, tonumber(members[k + 1]) - now, info}
  end
  return out
end

-- acquire: ARGV[5] token, ARGV[6] ttl (ms), ARGV[7] '' when this run does not wait, '1' when it
-- joins the queue's end when busy, 'handoff:C' when it joins the queue's end and accepts the
-- shared hold handed over by a release for a claim window of C ms (hand_readers,
-- lib/share.lua), 'ticket:T' when it joins at ticket T (a quorum waiter, see
-- lib/queue.lua), ARGV[8] how long a
-- waiter's ':alive' outlasts its next retry (ms), ARGV[9] how long a waiter blocks when a
-- holder has no TTL (ms), ARGV[10] the restart guard in ms ('' or '0': none; see
-- restart_guard_left in lib/queue.lua), ARGV[11..] holder-info field/value pairs.
-- Returns {1, fence} when acquired (fence a decimal string); {3, left_ms, uptime_s} when it
-- could enter but is held back by the restart guard; {0, pttl} when busy, pttl bounding
-- the caller's wait; an error 'PERMITS ...' when the name is held with --permits.
if op == 'acquire' then
  local token, ttl, waits = ARGV[5], tonumber(ARGV[6]), ARGV[7] ~= ''
  local ticket = waits and string.match(ARGV[7], '^ticket:(%d+)$')
  local claim = waits and not ticket and string.match(ARGV[7], '^handoff:(%d+)$')
  local kind, shared = recorded()
  if kind ~= 'none' and kind ~= 'string' then
    return redis.error_reply('WRONGTYPE the lock key holds a ' .. kind .. ', not a lock token')
  end
  local value = kind == 'string' and redis.call('GET', KEYS[1]) or ''
  if string.sub(value, 1, 16) == 'redlock-permits/' then
    return redis.error_reply('PERMITS is held with --permits ' .. string.sub(value, 17) ..
                             ', not --shared; every holder of a name must give the same ' ..
                             '--permits and --shared')
  end
  -- Checked before anything is written, as acquire.lua does.
  local fence_kind, fence_error = check_fence_counter(KEYS[2])
  if fence_error then return fence_error end
  local now = now_ms()
  if shared and live(now) == 0 then
    -- Every holder ended (the marker outlived them by a millisecond): the lock is free.
    redis.call('DEL', KEYS[1], KEYS[4])
    kind, shared = 'none', false
  elseif kind == 'none' then
    -- No marker: whatever holders are left were ended by deleting the lock key.
    redis.call('DEL', KEYS[4])
  end
  -- Our own token already holds: an earlier send of this acquire took it and its reply was
  -- lost. It keeps its hold and the fence it drew (see acquire.lua).
  if shared and fence_kind ~= 'none' and holding(token, now) then
    extend(token, ttl, now)
    -- A hand-off's wake-up may still be on our list (see acquire.lua): no BLPOP takes it now.
    if waits then redis.call('DEL', wprefix .. token) end
    return {1, redis.call('HGET', H .. token, 'fence')}
  end
  local blocker = nil
  local ok = kind == 'none' or shared
  if ok then ok, blocker = admitted(token) end
  -- Admissible, with no fence counter: a new name, or data lost with every holder.
  local guard_left, uptime = nil, nil
  if ok and fence_kind == 'none' then guard_left, uptime = restart_guard_left(ARGV[10]) end
  if not ok or guard_left then
    local pttl
    if guard_left then
      pttl = guard_left
    elseif kind == 'string' and not shared then
      pttl = redis.call('PTTL', KEYS[1])  -- an exclusive holder
    else
      -- Behind a waiting exclusive run: until it could be gone, or the shared holders are.
      pttl = redis.call('PTTL', wprefix .. blocker .. ':alive')
      if shared then
        local held = redis.call('PTTL', KEYS[1])
        if held >= 0 and (pttl < 0 or held < pttl) then pttl = held end
      end
    end
    if waits then
      queue_join(KEYS[3], token, ticket)
      local block = pttl >= 0 and pttl or tonumber(ARGV[9])
      redis.call('SET', wprefix .. token .. ':alive', 'shared', 'PX', block + tonumber(ARGV[8]))
      waiter_note(wprefix, token, 11, block + tonumber(ARGV[8]))
      -- What a release needs to admit us (hand_readers, lib/share.lua).
      if claim then
        take_note(wprefix, token, ARGV[6], 'shared:' .. claim, 11, block + tonumber(ARGV[8]))
      end
      redis.call('PEXPIRE', KEYS[3], block + 2 * tonumber(ARGV[8]) + ttl)
    end
    if guard_left then return {3, guard_left, uptime} end
    return {0, pttl}
  end
  -- Taken free (not shared yet): every run that the set of open runs names died without a
  -- trace, and the ledger records it now, as acquire.lua does for a plain lock (one SMEMBERS,
  -- of a set that is normally gone). take_shared (lib/share.lua) is the one way in.
  local fence = take_shared(KEYS[1], KEYS[2], KEYS[4], KEYS[7], KEYS[5], KEYS[3], wprefix, token,
                            ttl, ttl, now, not shared, ARGV, 11)
  -- The shared waiters queued before the first exclusive one may enter beside us: wake them
  -- all at once (readers are admitted together), and nobody else.
  wake_admissible(KEYS[3], wprefix, linger, false)
  return {1, fence}
end

-- renew: ARGV[5] token, ARGV[6] ttl (ms). 1 extended, 0 not ours (its hold ended, or the lock
-- key was deleted or replaced).
if op == 'renew' then
  local token, ttl = ARGV[5], tonumber(ARGV[6])
  local now = now_ms()
  if not holding(token, now) then return 0 end
  extend(token, ttl, now)
  return 1
end

-- Ends `token`'s hold at `now`, or with keep > 0 (ms, --min-hold) shortens it to that. Returns
-- 1 released (or shortened), 0 already gone, -1 the lock is held by others only (left untouched).
local function release(token, keep, now)
  local kind, shared = recorded()
  if not holding(token, now) then
    if kind == 'none' or (shared and live(now) == 0) then return 0 end
    return -1
  end
  if keep > 0 then
    -- Ends at now + keep, no longer than it would have: --min-hold only keeps what it has.
    redis.call('ZADD', KEYS[4], now + keep, token)
    redis.call('PEXPIRE', H .. token, keep)
    refit(now)
    return 1
  end
  redis.call('ZREM', KEYS[4], token)
  redis.call('DEL', H .. token)
  redis.call('SREM', KEYS[7], H .. token)
  refit(now, true)
  return 1
end

-- release: ARGV[5] token, ARGV[6] keep (ms; 0 ends the hold now). 1 released (or shortened),
-- 0 already gone, -1 the lock is held by others only (left untouched).
if op == 'release' then
  return release(ARGV[5], tonumber(ARGV[6]), now_ms())
end

-- finish: a holder's last step after its command, in one round trip: its release, then the
-- record of its run, as ledger.lua does both for a plain lock, and its record's mark taken away
-- (lib/abandoned.lua). ARGV[5] token, ARGV[6] keep (ms), as for release; ARGV[7..13] the record
-- and ARGV[14..] its field/value pairs (record_run, lib/ledger.lua). Returns ledger.lua's reply:
-- {now_ms, held (1/0), slot written (1/0), release (1, 0 or -1 as release), what kept the
-- record from being written ('' when nothing did)}.
if op == 'finish' then
  local token, keep = ARGV[5], tonumber(ARGV[6])
  local now = now_ms()
  -- Still held: judged by the holder's own hold (its token's end in the holders), not by the
  -- lock key, which only says that some shared holders are in.
  local held = holding(token, now)
  -- The release first, exactly as 'release' does it, so that nothing the record meets (a key of
  -- the wrong type, a full server) can keep the hold from ending; the record never fails the
  -- script, and is written in the same atomic step.
  local released = release(token, keep, now)
  local marked, problem = record_run(KEYS[5], KEYS[6], now, true, held, 7, 14)
  settle_record(H .. token, token, KEYS[7], held and keep or 0)
  if not held then
    local fence = nil
    for k = 14, #ARGV - 1, 2 do
      if ARGV[k] == 'fence' then fence = ARGV[k + 1] end
    end
    drop_abandoned_guess(KEYS[5], fence, tonumber(ARGV[8]) or 0)
  end
  return {string.format('%d', now), held and 1 or 0, marked, released, problem}
end

-- abandon: ARGV[5] token, ARGV[6] '' to give up or 'ticket:T' to step back. Giving up leaves
-- the queue and ends a hold the token has (an acquire whose reply was lost); whoever can enter
-- now is woken. A quorum waiter whose attempt took no majority steps back: it ends the hold it
-- took here but keeps its place at ticket T, marked alive ('shared') for ARGV[7] ms, in one
-- step (abandon.lua says why). Returns 1 when it ended a hold.
if op == 'abandon' then
  local token = ARGV[5]
  local ticket = string.match(ARGV[6] or '', '^ticket:(%d+)$')
  queue_leave_or_keep(KEYS[3], wprefix, token, ticket, 'shared', ARGV[7])
  local now = now_ms()
  local kind, shared = recorded()
  local deleted = 0
  if holding(token, now) then
    redis.call('ZREM', KEYS[4], token)
    redis.call('DEL', H .. token)
    redis.call('SREM', KEYS[7], H .. token)
    deleted = 1
  end
  if shared then
    if refit(now) > 0 then wake_admissible(KEYS[3], wprefix, linger, false) end
  elseif kind == 'none' then
    wake_admissible(KEYS[3], wprefix, linger, true)
  end
  return deleted
end

-- holds: ARGV[5] token. 1 when it holds the lock shared (a nested run checks its parent's).
if op == 'holds' then
  return holding(ARGV[5], now_ms()) and 1 or 0
end

-- status (read-only): {1 when the marker is there else 0, fence
-- or false, now_s, now_us, holder...}, each holder {0, token, pttl, {record field/value...}}.
if op == 'status' then
  local _, shared = recorded()
  local fence = false
  if redis.call('TYPE', KEYS[2]).ok == 'string' then fence = redis.call('GET', KEYS[2]) end
  local t = redis.call('TIME')
  local reply = {shared and 1 or 0, fence, t[1], t[2]}
  if shared then
    for _, h in ipairs(holders(now_ms())) do reply[#reply + 1] = h end
  end
  return reply
end

-- force: ends every shared hold and the marker (release --force), waking whoever can enter.
-- Returns the holders removed, each {0, token, pttl, {record...}}.
if op == 'force' then
  local _, shared = recorded()
  if not shared then return {} end
  local removed = holders(now_ms())
  for _, h in ipairs(removed) do
    redis.call('DEL', H .. h[2])
    redis.call('SREM', KEYS[7], H .. h[2])
  end
  redis.call('DEL', KEYS[1], KEYS[4])
  wake_admissible(KEYS[3], wprefix, linger, true)
  return removed
end

return redis.error_reply('ERR unknown shared operation ' .. tostring(op))

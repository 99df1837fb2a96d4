-- Permits (--permits N > 1): up to N holders of one lock at once. One script with one entry per
-- operation, because scripts sent to Redis cannot share code and every operation needs the same
-- survey of the permits; lib/queue.lua, lib/ledger.lua, lib/abandoned.lua and lib/open_runs.lua
-- are prepended.
--
-- Data model, all in the lock's slot:
--   lock key           'redlock-permits/N': the record of N, and a marker that keeps the plain
--                      lock (SET NX PX, redis-py's Lock, --permits 1) out while permits are held.
--                      Its TTL is stretched to cover every permit, so it ends with the last one.
--   P .. i  (1..N)     permit i: a plain string holding its holder's token, with the holder's TTL,
--                      so a holder that dies frees its permit when the TTL ends, without help.
--   P .. i .. ':info'  permit i's holder info (--hold-info), same TTL; that of a run with a
--                      ledger without expiry, until its end is recorded, and named in the set
--                      of open runs meanwhile (lib/abandoned.lua): should the run die with its
--                      watchdog, it tells of the run.
--   P .. i .. ':fence' the fence permit i's holder drew, same TTL: a re-sent acquire (its
--                      reply lost) answers it, since the counter may have moved on for others.
--   fence counter      shared by all holders: every holder's fence is above every earlier one.
--   waiters' queue     as for the plain lock (a list in arrival order, or for a quorum's waiters
--                      a sorted set by ticket, lib/queue.lua): the first F live waiters have the
--                      F free permits reserved, the k-th of them the k-th free permit, and a
--                      freed permit wakes exactly the waiter it admits.
-- Deleting the lock key by hand ends every permit (renewals fail, the next acquire clears them).
--
-- KEYS[1] lock key, KEYS[2] fence counter, KEYS[3] waiters' queue, KEYS[4] the run ledger,
-- KEYS[5] the once-per record, KEYS[6] the set of open runs (lib/open_runs.lua).
-- ARGV[1] operation, ARGV[2] P (the permits' key prefix, with the lock's hash tag), ARGV[3] the
-- waiters' key prefix (see lib/queue.lua), ARGV[4] how long an unclaimed wake-up may linger (ms);
-- the operation's own arguments from ARGV[5] on (see each one below).

local op, P, wprefix, linger = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local MARK = 'redlock-permits/'

-- The lock key's TYPE and, when it is a permits record, its N.
local function recorded()
  local kind = redis.call('TYPE', KEYS[1]).ok
  if kind ~= 'string' then return kind, nil end
  local n = tonumber(string.match(redis.call('GET', KEYS[1]), '^redlock%-permits/(%d+)$'))
  -- Never more than max_permits (permits.hpp): a larger record is not ours to survey.
  if n and (n < 1 or n > 1000) then n = nil end
  return kind, n
end

-- Permits 1..n: the values (false when free), how many are free and the first free one, and
-- the shortest and longest remaining TTL of the held ones (-1 in min: one has no expiry).
local function survey(n)
  local s = {values = {}, free = 0, first = nil, min = nil, max = -2}
  for i = 1, n do
    local v = redis.call('GET', P .. i)
    s.values[i] = v
    if not v then
      s.free = s.free + 1
      s.first = s.first or i
    else
      local pttl = redis.call('PTTL', P .. i)
      if pttl == -1 or s.min == -1 then s.min = -1
      elseif not s.min or pttl < s.min then s.min = pttl end
      if pttl > s.max then s.max = pttl end
    end
  end
  return s
end

-- The lock key must last as long as the longest permit, and no longer once none is held.
local function stretch(ms)
  local pttl = redis.call('PTTL', KEYS[1])
  if pttl >= 0 and pttl < ms then redis.call('PEXPIRE', KEYS[1], ms) end
end
local function refit(n)
  local s = survey(n)
  if s.free == n then redis.call('DEL', KEYS[1])
  elseif s.max > 0 then redis.call('PEXPIRE', KEYS[1], s.max) end
  return s
end

-- Whether `token` may take one of `free` permits: the first `free` live waiters have them
-- reserved, so it may when it is one of them, or when fewer than `free` live runs wait. Returns
-- how many live waiters are ahead of it when it may (the free permit it takes is the next one
-- after theirs), nil when it may not. Entries of waiters that died (':alive' expired) are
-- dropped on the way.
-- Taking the permit by place, not the first free one, is what lets a quorum agree: every node
-- orders a quorum's waiters by ticket, so nodes that have the same permits free give the same
-- waiter the same permit, whatever order the waiters' requests reached them in.
local function admitted(token, free)
  local ahead, i = 0, 0
  while ahead < free do
    local w = queue_at(KEYS[3], i)
    if not w or w == token then return ahead end
    if redis.call('EXISTS', wprefix .. w .. ':alive') == 1 then
      ahead, i = ahead + 1, i + 1
    else
      queue_remove(KEYS[3], w)
    end
  end
  return nil
end

-- The k-th live waiter, or nil; entries of waiters that died are dropped on the way.
local function nth_live(k)
  local seen, i = 0, 0
  while true do
    local w = queue_at(KEYS[3], i)
    if not w then return nil end
    if redis.call('EXISTS', wprefix .. w .. ':alive') == 1 then
      seen = seen + 1
      if seen == k then return w end
      i = i + 1
    else
      queue_remove(KEYS[3], w)
    end
  end
end

-- Wakes the k-th live waiter: the one a newly freed permit admits (the k-1 before it have the
-- other free permits reserved, and were woken when those were freed). One waiter per permit.
local function wake_nth(k)
  local w = nth_live(k)
  if w then
    redis.call('RPUSH', wprefix .. w, '1')
    redis.call('PEXPIRE', wprefix .. w, linger)
  end
  return w
end

-- Where `token` holds a permit of n: `hint` first (the holder knows its permit), else a scan.
local function find(token, n, hint)
  if hint and hint >= 1 and hint <= n then
    if redis.call('GET', P .. hint) == token then return hint end
    return nil
  end
  for i = 1, n do
    if redis.call('GET', P .. i) == token then return i end
  end
  return nil
end

-- Permit i's keys: the permit, its holder info and the fence its holder drew (DEL takes them all).
local function permit_keys(i)
  return P .. i, P .. i .. ':info', P .. i .. ':fence'
end

-- Extends permit i to `ms`: the permit, its fence, and its holder info unless that has no
-- expiry (a run with a ledger: lib/abandoned.lua).
local function expire_permit(i, ms)
  redis.call('PEXPIRE', P .. i, ms)
  redis.call('PEXPIRE', P .. i .. ':fence', ms)
  local info = P .. i .. ':info'
  if redis.call('PTTL', info) ~= -1 then redis.call('PEXPIRE', info, ms) end
end

local function holder_info(i)
  local info = P .. i .. ':info'
  if redis.call('TYPE', info).ok ~= 'hash' then return {} end
  if redis.call('HGET', info, 'token') ~= redis.call('GET', P .. i) then return {} end
  return redis.call('HGETALL', info)
end

-- Takes free permit i of n for `token` for `px` ms and returns its new fence (a decimal string):
-- the one way a permit is taken, by the run's own acquire and by a release that hands it to a
-- waiter (hand_permit below), so that a hand-off writes exactly what the waiter's acquire would.
-- `kind`: the lock key's type ('none': no record yet, it is written). `ttl` is what the holder
-- record says of the TTL, `now` Redis's clock in ms; the holder-info field/value pairs are
-- args[from..]. The run leaves the queue (its wake-up list, ':alive', ':who' and ':take' go).
local function take_permit(n, i, token, px, ttl, now, kind, args, from)
  redis.call('SET', P .. i, token, 'PX', px)
  if kind == 'none' then
    redis.call('SET', KEYS[1], MARK .. n, 'PX', px)
  else
    stretch(tonumber(px))
  end
  queue_remove(KEYS[3], token)
  redis.call('DEL', wprefix .. token, wprefix .. token .. ':alive', wprefix .. token .. ':who',
             wprefix .. token .. ':take')
  -- Never below this master's clock in microseconds, as with a plain lock.
  local fence = next_fence_ahead(KEYS[2])
  redis.call('SET', P .. i .. ':fence', fence, 'PX', px)
  local info = P .. i .. ':info'
  -- The permit's previous holder, when its record is still there and marked, died without a
  -- trace (its permit ran out while other permits were held, so the record outlived it): the
  -- ledger records it before this run replaces the record. One HMGET, only where the permits
  -- were not all free (else record_open in the acquire took every such record).
  local left, left_size = nil, nil
  if kind ~= 'none' then left, left_size = abandoned_entry(info, token, now) end
  if left then record_abandoned(KEYS[4], left, left_size) end
  redis.call('DEL', info)
  if #args >= from then
    local marked = write_record(info, {'token', token, 'fence', fence, 'ttl_ms', ttl,
                                       'permit', i, 'acquired_ms', now}, args, from)
    -- A run with a ledger marks its record, which then outlives the permit until the run's end
    -- is recorded, and names it in the set of open runs, where the readers and the next run
    -- find it (lib/abandoned.lua). Instead of the PEXPIRE: no more commands than before.
    if marked then
      redis.call('SADD', KEYS[6], info)
    else
      redis.call('PEXPIRE', info, px)
    end
  elseif left then
    redis.call('SREM', KEYS[6], info)
  end
  return fence
end

-- acquire: ARGV[5] token, ARGV[6] ttl (ms), ARGV[7] '' when this run does not wait, '1' when it
-- joins the queue's end when busy, 'handoff:C' when it joins the queue's end and accepts a
-- permit handed over by a release for a claim window of C ms (hand_permit below), 'ticket:T'
-- when it joins at ticket T (a quorum waiter, see lib/queue.lua), ARGV[8] how long
-- a waiter's ':alive' outlasts its next retry (ms), ARGV[9] how long a waiter blocks when a
-- holder has no TTL (ms), ARGV[10] N, ARGV[11] the restart guard in ms ('' or '0': none; see
-- restart_guard_left in lib/queue.lua), ARGV[12] the permit this run asks for ('' for none: a
-- quorum's run whose permits split, see below), ARGV[13..] holder-info field/value pairs.
-- Returns {1, fence, 'permit', i, 'free', F} when acquired, F the permits that were free before
-- (a string of N '0'/'1', permit 1 first; fence a decimal string; a re-send returns
-- 'counter', the counter's value now, instead of 'free'); {3, left_ms, uptime_s} when a permit
-- is free but held back by the restart guard; {0, pttl} when busy,
-- pttl bounding the caller's wait; an error 'PERMITS ...' when the lock is held with another N.
if op == 'acquire' then
  local token, ttl, waits, n = ARGV[5], ARGV[6], ARGV[7] ~= '', tonumber(ARGV[10])
  local ticket = waits and string.match(ARGV[7], '^ticket:(%d+)$')
  local claim = waits and not ticket and string.match(ARGV[7], '^handoff:(%d+)$')
  local kind, have = recorded()
  if kind ~= 'none' and kind ~= 'string' then
    return redis.error_reply('WRONGTYPE the lock key holds a ' .. kind .. ', not a lock token')
  end
  if kind == 'string' and have ~= n then
    if redis.call('GET', KEYS[1]) == 'redlock-shared' then
      return redis.error_reply('PERMITS is held with --shared, not with --permits ' .. n)
    end
    if not have then
      return redis.error_reply('PERMITS is held as a plain lock (--permits 1 or another ' ..
                               'client), not with --permits ' .. n)
    end
    -- A record whose permits all ended (the key outlived them by a millisecond) is no holder.
    if survey(have).free ~= have then
      return redis.error_reply('PERMITS is held with --permits ' .. have .. ', not ' .. n ..
                               '; every holder of a name must give the same --permits')
    end
    redis.call('DEL', KEYS[1])
    kind = 'none'
  end
  -- Checked before anything is written, as acquire.lua does.
  local fence_kind, fence_error = check_fence_counter(KEYS[2])
  if fence_error then return fence_error end
  local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  if kind == 'none' then
    -- No record: whatever permits are left were ended by deleting the lock key, or ran out. A
    -- run whose record outlived its permit died without a trace: the ledger records it now, as
    -- acquire.lua does for a plain lock (one SMEMBERS, of a set that is normally gone).
    record_open(KEYS[6], KEYS[4], now, token)
    for i = 1, n do redis.call('DEL', permit_keys(i)) end
  end
  local s = survey(n)
  -- Our own token already holds a permit: an earlier send of this acquire took it and its reply
  -- was lost. It keeps its permit and the fence it drew then, not the counter's value now: other
  -- holders may have drawn fences since (unlike a plain lock's), and two holders at once must
  -- never carry the same fence. A permit taken before the fence was kept per permit has none
  -- recorded: the counter then, as before.
  for i = 1, n do
    if s.values[i] == token and fence_kind ~= 'none' then
      expire_permit(i, ttl)
      stretch(tonumber(ttl))
      local counter = redis.call('GET', KEYS[2])
      local drawn = redis.call('GET', P .. i .. ':fence') or counter
      -- A hand-off's wake-up may still be on our list (see acquire.lua): no BLPOP takes it now.
      if waits then redis.call('DEL', wprefix .. token) end
      -- The counter too, for a quorum: its fence must exceed every node's counter it reads.
      return {1, drawn, 'permit', i, 'counter', counter}
    end
  end
  local ahead = s.free > 0 and admitted(token, s.free) or nil
  -- A free permit with no fence counter: a new name, or data lost with every permit's holder.
  local guard_left, uptime = nil, nil
  if ahead and fence_kind == 'none' then guard_left, uptime = restart_guard_left(ARGV[11]) end
  if not ahead or guard_left then
    local reply
    if guard_left then
      reply = {3, guard_left, uptime}
    elseif s.free == 0 then
      reply = {0, s.min}
    else
      -- Reserved for the waiters ahead: wait no longer than the first could still be alive.
      reply = {0, redis.call('PTTL', wprefix .. queue_first(KEYS[3]) .. ':alive')}
    end
    if waits then
      queue_join(KEYS[3], token, ticket)
      local block = reply[2] >= 0 and reply[2] or tonumber(ARGV[9])
      redis.call('SET', wprefix .. token .. ':alive', '1', 'PX', block + tonumber(ARGV[8]))
      waiter_note(wprefix, token, 13, block + tonumber(ARGV[8]))
      -- What a release needs to hand us a permit (hand_permit below).
      if claim then take_note(wprefix, token, ARGV[6], claim, 13, block + tonumber(ARGV[8])) end
      redis.call('PEXPIRE', KEYS[3], block + 2 * tonumber(ARGV[8]) + tonumber(ttl))
    end
    return reply
  end
  -- The free permit after those reserved for the `ahead` waiters before us (admitted), unless
  -- the run asks for a permit that is free here. Nodes agree on "the k-th free permit" only when
  -- they agree on which permits are free, and a quorum's holders make them differ: a holder
  -- keeps its permit on a majority and gives back what the other nodes gave it, so with holders
  -- of permit 1 on nodes {a,b} and of permit 2 on {b,c}, permit 3 is free everywhere but the
  -- first free one is 2, 3 and 1. A run whose permits split asks next for the permit most nodes
  -- said was free. Taking any free permit keeps the reservation: `ahead` < free, so the waiters
  -- ahead still find a free permit each.
  local want, i = tonumber(ARGV[12]), s.first
  if want and want >= 1 and want <= n and not s.values[want] then
    i = want
  else
    for k = i, n do
      if not s.values[k] then
        if ahead == 0 then
          i = k
          break
        end
        ahead = ahead - 1
      end
    end
  end
  local free = {}
  for k = 1, n do free[k] = s.values[k] and '0' or '1' end
  local fence = take_permit(n, i, token, ttl, ttl, now, kind, ARGV, 13)
  return {1, fence, 'permit', i, 'free', table.concat(free)}
end

-- renew: ARGV[5] token, ARGV[6] ttl (ms), ARGV[7] the holder's permit. 1 extended, 0 not ours
-- (the permit was taken or expired, or the lock key was deleted or replaced).
if op == 'renew' then
  local token, ttl, i = ARGV[5], ARGV[6], tonumber(ARGV[7])
  local _, n = recorded()
  if not n or not find(token, n, i) then return 0 end
  expire_permit(i, ttl)
  stretch(tonumber(ttl))
  return 1
end

-- ---- the hand-off (issue 35), as hand_off_head (lib/take.lua) does for a plain lock ----
-- Permit i was just freed by a release: it admits the F-th live waiter (F the permits free now;
-- the F-1 before it have the others reserved). When that waiter asked for a hand-off
-- (take_note), the release takes permit i for it in the same atomic step, as its own acquire
-- would (take_permit: its token, the next fence, its holder info), for its claim window C only,
-- and its wake-up says 'handoff:<fence>:<permit>'; it starts its command on it (waiter.cpp), one
-- round trip after the holder's command ended instead of two. The safety argument is
-- hand_off_head's: a waiter that died holds the permit for C, not its TTL, and one that gets the
-- wake-up late confirms with an acquire, which finds its token on the permit. The next live
-- waiter (the first no free permit admits now) blocked for as long as the shortest permit had
-- left, which may be longer than C: it looks again, as after a plain hand-off. Returns false
-- (nothing written) when the waiter asked for none, or its acquire is to decide (a fence counter
-- that is missing, where the restart guard judges, or unusable): the caller wakes it instead.
-- The lock key stays as it was, stretched to C if need be: it covered the released permit.
local function hand_permit(n, i)
  local free = survey(n).free
  local w = nth_live(free)
  if not w then return false end
  local args = take_args(wprefix, w)
  if not args or check_fence_counter(KEYS[2]) ~= 'string' then return false end
  local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  local fence = take_permit(n, i, w, args[2], args[1], now, 'string', args, 3)
  redis.call('RPUSH', wprefix .. w, 'handoff:' .. fence .. ':' .. i)
  redis.call('PEXPIRE', wprefix .. w, linger)
  local next = nth_live(free)
  if next and redis.call('LLEN', wprefix .. next) == 0 then
    redis.call('RPUSH', wprefix .. next, '1')
    redis.call('PEXPIRE', wprefix .. next, linger)
  end
  return true
end

-- Gives back `token`'s permit (`hint`, or nil to look for the token): deletes it, or with keep
-- > 0 (ms, --min-hold) shortens it to that. Returns 1 released (or shortened), 0 already gone,
-- -1 held by another token (left untouched).
local function release(token, keep, hint)
  local kind, n = recorded()
  if not n then return kind == 'none' and 0 or -1 end
  local i = find(token, n, hint)
  if not i then
    if hint then return redis.call('EXISTS', P .. hint) == 1 and -1 or 0 end
    return survey(n).free == n and 0 or -1
  end
  if keep > 0 then
    for _, k in ipairs({permit_keys(i)}) do redis.call('PEXPIRE', k, keep) end
    stretch(keep)
    return 1
  end
  redis.call('DEL', permit_keys(i))
  -- The permit just freed admits the next waiter not already admitted: handed to it, or it
  -- alone is woken.
  if not hand_permit(n, i) then wake_nth(refit(n).free) end
  return 1
end

-- release: ARGV[5] token, ARGV[6] keep (ms; 0 deletes now), ARGV[7] the holder's permit, or
-- '' to look for the token (release --token). 1 released (or shortened), 0 already gone, -1
-- held by another token.
if op == 'release' then
  return release(ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]))
end

-- finish: a holder's last step after its command, in one round trip: its release, then the
-- record of its run, as ledger.lua does both for a plain lock, and its record's mark taken away
-- (lib/abandoned.lua). ARGV[5] token, ARGV[6] keep (ms), ARGV[7] the holder's permit, as for
-- release; ARGV[8..14] the record and ARGV[15..] its field/value pairs (record_run,
-- lib/ledger.lua). Returns ledger.lua's reply: {now_ms, held (1/0), slot written (1/0), release
-- (1, 0 or -1 as release), what kept the record from being written ('' when nothing did)}.
if op == 'finish' then
  local token, keep, hint = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
  local t = redis.call('TIME')
  local now = t[1] * 1000 + math.floor(t[2] / 1000)
  -- Still held: judged by the holder's own permit, which holds its token until released; the
  -- lock key only says that some permits are held.
  local _, n = recorded()
  local held = n ~= nil and find(token, n, hint) ~= nil
  -- The release first, exactly as 'release' does it, so that nothing the record meets (a key of
  -- the wrong type, a full server) can keep the permit from being given back; the record never
  -- fails the script, and is written in the same atomic step.
  local released = release(token, keep, hint)
  local marked, problem = record_run(KEYS[4], KEYS[5], now, true, held, 8, 15)
  if hint then settle_record(P .. hint .. ':info', token, KEYS[6], held and keep or 0) end
  if not held then
    local fence = nil
    for k = 15, #ARGV - 1, 2 do
      if ARGV[k] == 'fence' then fence = ARGV[k + 1] end
    end
    drop_abandoned_guess(KEYS[4], fence, tonumber(ARGV[9]) or 0)
  end
  return {string.format('%d', now), held and 1 or 0, marked, released, problem}
end

-- abandon: ARGV[5] token, ARGV[6] '' to give up, 'ticket:T' to step back, or 'keep:K' to
-- settle on permit K. Giving up leaves the queue, deletes a permit the token holds (an acquire
-- whose reply was lost), and passes a reserved permit on. A quorum waiter whose attempt took no
-- majority steps back: gives back the permit it took here but keeps its place at ticket T,
-- marked alive for ARGV[7] ms, in one step (abandon.lua says why). A quorum holder settles: the
-- majority agreed on permit K, so on every other node it leaves the queue and gives back a
-- permit other than K that it took there (a node that chose differently, or answered late).
-- Returns 1 when it deleted a permit.
if op == 'abandon' then
  local token, mode = ARGV[5], ARGV[6] or ''
  local ticket = string.match(mode, '^ticket:(%d+)$')
  local keep = tonumber(string.match(mode, '^keep:(%d+)$'))
  queue_leave_or_keep(KEYS[3], wprefix, token, ticket, '1', ARGV[7])
  local _, n = recorded()
  if not n then return 0 end
  local deleted = 0
  local i = find(token, n, nil)
  if i == keep then return 0 end
  if i then
    redis.call('DEL', permit_keys(i))
    deleted = 1
  end
  local free = refit(n).free
  if free > 0 then wake_nth(free) end
  return deleted
end

-- holds: ARGV[5] token. 1 when it holds one of the permits (a nested run checks its parent's).
if op == 'holds' then
  local _, n = recorded()
  if n and find(ARGV[5], n, nil) then return 1 end
  return 0
end

-- status (read-only): {N or 0, fence or false, now_s, now_us, holder...}, each holder
-- {permit, token, pttl, {info field/value...}}.
if op == 'status' then
  local _, n = recorded()
  local fence = false
  if redis.call('TYPE', KEYS[2]).ok == 'string' then fence = redis.call('GET', KEYS[2]) end
  local now = redis.call('TIME')
  local reply = {n or 0, fence, now[1], now[2]}
  for i = 1, (n or 0) do
    local v = redis.call('GET', P .. i)
    if v then reply[#reply + 1] = {i, v, redis.call('PTTL', P .. i), holder_info(i)} end
  end
  return reply
end

-- force: ends every permit and the record (release --force), waking as many waiters as there
-- are permits. Returns the holders removed, each {permit, token, pttl, {info...}}.
if op == 'force' then
  local _, n = recorded()
  local removed = {}
  for i = 1, (n or 0) do
    local v = redis.call('GET', P .. i)
    if v then
      removed[#removed + 1] = {i, v, redis.call('PTTL', P .. i), holder_info(i)}
      redis.call('DEL', permit_keys(i))
    end
  end
  if n then
    redis.call('DEL', KEYS[1])
    for k = n, 1, -1 do wake_nth(k) end
  end
  return removed
end

return redis.error_reply('ERR unknown permits operation ' .. tostring(op))

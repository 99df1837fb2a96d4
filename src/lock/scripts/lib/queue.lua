-- What the scripts that take or give up a lock share, prepended to them at build time (acquire,
-- permits, release, abandon, force_release, ledger), since scripts sent to Redis cannot share
-- code: the fence counter's check and step, the waiters' queue and the release itself.

-- Checks the fence counter `key` the way INCR will read it, before anything is written: a script
-- is not rolled back, so failing at INCR after SET would leave a lock that nobody holds. INCR
-- takes '0' or a digit string without leading zeros ('0123' and '00' fail), and fences stay below
-- 2^62 (lock_replies.cpp refuses anything higher), so the counter must be at most 2^62 - 2.
-- Returns the counter's type, or an error reply to return as it is.
local function check_fence_counter(key)
  local kind = redis.call('TYPE', key).ok
  if kind == 'none' then return kind end
  local counter = kind == 'string' and redis.call('GET', key) or nil
  if not counter or not (counter == '0' or string.match(counter, '^[1-9]%d*$')) then
    return nil, redis.error_reply('WRONGTYPE the fence counter ' .. key ..
                                  ' is not a decimal counter INCR can raise')
  end
  if #counter > 19 or (#counter == 19 and counter > '4611686018427387902') then
    return nil, redis.error_reply('WRONGTYPE the fence counter ' .. key .. ' holds ' .. counter ..
                                  ', at or past the limit of fences (2^62)')
  end
  return kind
end

-- The next fence from counter `key` (checked above), as a decimal string: Lua's numbers are
-- doubles, exact only below 2^53. The fence never goes below this master's clock in
-- microseconds. A counter can fall behind the fences already handed out: lost with Redis's data
-- (a restart without persistence), or behind on a replica that a failover promoted (increments
-- that had not replicated). Raised to the clock first, the next fence is above every fence an
-- earlier master handed out, as long as the two masters' clocks agree within the time the
-- failover took (one acquire per microsecond at most: a script takes longer than that, so the
-- clock keeps ahead of the count).
-- `floor`, when given, is a quorum acquire's (acquire.lua's ARGV[10]): the fence is raised to it
-- as to the clock. A quorum counts a fence that a majority of its nodes drew alike as agreed and
-- skips its fence step (QuorumLock::acquire says why that is safe); nodes that each follow their
-- own clock never draw alike, nodes given one floor above their clocks and counters all do.
-- Only ever a raise: the fence is never lower than without it.
-- Whether `a` is below `b`, both decimal strings without leading zeros: shorter is smaller.
local function decimal_below(a, b)
  return #a < #b or (#a == #b and a < b)
end

-- Counter `key` raised to `floor` when below it, then incremented: the new value.
local function fence_from(key, floor)
  if decimal_below(redis.call('GET', key) or '', floor) then redis.call('SET', key, floor) end
  redis.call('INCR', key)
  return redis.call('GET', key)
end

local function next_fence(key, floor)
  local now = redis.call('TIME')
  local clock = now[1] .. string.format('%06d', tonumber(now[2]))
  if floor and decimal_below(clock, floor) then clock = floor end
  return fence_from(key, clock)
end
-- The fence of a permit or a shared hold, whose holders hold at once: as next_fence, a second
-- above this master's clock. Over a quorum each such holder's fence is one above the highest its
-- nodes drew (QuorumLock::acquire's fence step), which two holders drawing at once could share
-- if their counters led the clock: a plain acquire's fence floor (acquire.lua's ARGV[10]) puts
-- counters up to a second ahead of the clock, and drawn from there, holders admitted together
-- drew one run of numbers and repeated fences (quorum_shared.bats). Kept ahead of those floors,
-- their draws follow the clock again, as they did before the floor.
local function next_fence_ahead(key)
  local now = redis.call('TIME')
  -- Below 2^53 (about 2255 in microseconds), so exact in Lua's doubles.
  local ahead = tonumber(now[1]) * 1000000 + tonumber(now[2]) + 1000000
  return next_fence(key, string.format('%d', ahead))
end
-- The delayed restart (issue 38), kept by the client. A fence counter never expires and is
-- never deleted, so a counter that is missing means a name that was never taken here, or data
-- that was lost: a restart without persistence (or from a truncated AOF), a FLUSHALL. In the
-- second case every lock, permit, shared hold and once-per record went with it, while a holder
-- from before may still run until its lease ends, at most one TTL after its last renewal. A
-- server younger than that could have lost such a holder in its restart (a FLUSHALL, which
-- leaves the uptime as it was, is not told apart from a new name): a free lock whose counter
-- is missing is then held back until the server is `guard_ms` old (the caller's --restart-guard, by
-- default the lock's TTL; '' or 0: no guard). On a server older than that, a missing counter is
-- a new name, which starts at once; every name that has a counter pays nothing (the caller
-- asks only when GET found none). INFO is allowed in scripts (Redis 6 and 7 replicate effects,
-- not the script) and readable on every topology, unlike a marker key, which a Cluster script
-- could not reach outside the lock's slot. Its uptime is in whole seconds, floor(now) -
-- floor(start): the true uptime is above uptime_s - 1, so the guard counts from there and never
-- ends early. A server whose INFO fails (renamed, refused by a proxy) is not guarded: the
-- man page says so.
-- The server's uptime in whole seconds, or nil when INFO does not tell it.
local function server_uptime()
  local info = redis.pcall('INFO', 'server')
  if type(info) ~= 'string' then return nil end
  return tonumber(string.match(info, 'uptime_in_seconds:(%d+)') or '')
end

-- Returns the time left in ms and the uptime in seconds, or nil when not held back.
local function restart_guard_left(guard_ms)
  local guard = tonumber(guard_ms or '') or 0
  if guard <= 0 then return nil end
  local uptime = server_uptime()
  if not uptime then return nil end
  local left = guard - (uptime - 1) * 1000
  if left <= 0 then return nil end
  return left, uptime
end

-- A waiter is its token in the queue plus prefix .. token .. ':alive' (it is still waiting)
-- and prefix .. token (its wake-up list); the prefix carries the lock's hash tag. A plain
-- single-node waiter that accepts a hand-off (lib/take.lua) also keeps prefix .. token ..
-- ':take', its acquire's arguments, with the same expiry as its ':alive'.
-- The queue is a list in arrival order on one node, or, for a quorum's waiters, a sorted set
-- scored by each waiter's ticket (the time it began waiting, by its host's clock): every node
-- then orders the same waiters the same way, whenever each of them reached it (quorum.cpp,
-- QuorumLock::acquire, says why a quorum needs that).

local function queue_is_ordered(queue)
  return redis.call('TYPE', queue).ok == 'zset'
end

local function queue_first(queue)
  if queue_is_ordered(queue) then
    return redis.call('ZRANGE', queue, 0, 0)[1]
  end
  return redis.call('LINDEX', queue, 0)
end

-- The entry at `index` (from 0), or nil past the end: permits.lua walks the queue by place.
local function queue_at(queue, index)
  if queue_is_ordered(queue) then
    return redis.call('ZRANGE', queue, index, index)[1]
  end
  return redis.call('LINDEX', queue, index) or nil
end

-- Returns how many entries it removed (0 or 1).
local function queue_remove(queue, token)
  if queue_is_ordered(queue) then
    return redis.call('ZREM', queue, token)
  end
  return redis.call('LREM', queue, 0, token)
end

-- Joins the queue, or keeps the place already held: at the end of a list, or at `ticket` (a
-- decimal string) in a sorted set. A name waited on by single-node runs and by a quorum on the
-- same server at once gets Redis's WRONGTYPE error here, before anything is written.
local function queue_join(queue, token, ticket)
  if ticket then
    redis.call('ZADD', queue, 'NX', ticket, token)
  elseif not redis.call('LPOS', queue, token) then
    redis.call('RPUSH', queue, token)
  end
end

-- Who a waiter is, for status (waiters.lua): prefix .. token .. ':who' holds
-- '<since_ms> <pid> <host>', written when it first joins (since: Redis's clock then) and given
-- the same expiry as its ':alive' mark at every attempt, so it goes when the mark goes and never
-- outlives the queue entry's own bound. `from`: where the holder-info field/value pairs start in
-- ARGV (host and pid are taken from them). The host is cut to 255 bytes and the pid to 20, so
-- the record stays small whatever a caller sends.
local function waiter_note(prefix, token, from, px)
  local who = prefix .. token .. ':who'
  if redis.call('PEXPIRE', who, px) == 1 then return end
  local host, pid = '', '0'
  for i = from, #ARGV - 1, 2 do
    if ARGV[i] == 'host' then
      host = string.sub(ARGV[i + 1], 1, 255)
    elseif ARGV[i] == 'pid' then
      pid = string.sub(ARGV[i + 1], 1, 20)
    end
  end
  local t = redis.call('TIME')
  local since = t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000))
  redis.call('SET', who, since .. ' ' .. pid .. ' ' .. host, 'PX', px)
end

-- A waiter that accepts a hand-off (an acquire's 'handoff:C', lib/take.lua) keeps what a
-- release needs to take the lock for it in prefix .. token .. ':take': its TTL (ms), its claim
-- window C (ms; 'shared:C' for a shared waiter, whose hold is another kind, lib/share.lua) and
-- its holder-info field/value pairs (ARGV[from..]), for `px` ms (its ':alive' mark's expiry). Written at each of its busy acquires, which also drop any hand-off already on
-- its wake-up list: one whose claim lapsed and whose lock went on to someone else. Whatever the
-- waiter finds there from now on was pushed after this call, which the waiter's lease bound
-- counts from (waiter.cpp). One function for every mode (acquire.lua, permits.lua, shared.lua).
local function take_note(prefix, token, ttl, claim, from, px)
  local take = prefix .. token .. ':take'
  redis.call('DEL', take, prefix .. token)
  redis.call('RPUSH', take, ttl, claim, unpack(ARGV, from))
  redis.call('PEXPIRE', take, px)
end

-- What waiter `token` left for a hand-off (take_note): {ttl, claim, field, value...}, or nil
-- when it asked for none (a waiter of an older version, a quorum's, --once-per) or the list is
-- not one that take_note wrote for this kind of hold (`shared`: a shared hold; else the lock
-- itself or a permit), so that a shared waiter is never handed the lock exclusive.
local function take_args(prefix, token, shared)
  local args = redis.pcall('LRANGE', prefix .. token .. ':take', 0, -1)
  if type(args) ~= 'table' or args.err or #args < 2 or not string.match(args[1], '^%d+$') then
    return nil
  end
  local claim = string.match(args[2], shared and '^shared:(%d+)$' or '^(%d+)$')
  if not claim or tonumber(claim) <= 0 then return nil end
  args[2] = claim
  return args
end

-- Writes a holder's record `record` (a hash): `fields` (the taker's own: token, fence, ...) and
-- then the holder-info field/value pairs args[from..]. Returns whether they mark the record for
-- the ledger (a 'ledger' field: lib/abandoned.lua), which the caller then leaves without expiry.
-- One function for the lock (take_lock), a permit (take_permit) and a shared hold (take_shared).
local function write_record(record, fields, args, from)
  local marked = false
  for i = from, #args do
    fields[#fields + 1] = args[i]
    if (i - from) % 2 == 0 and args[i] == 'ledger' then marked = true end
  end
  redis.call('HSET', record, unpack(fields))
  return marked
end

-- A waiter that gives up leaves the queue (`ticket` nil); a quorum waiter whose attempt took no
-- majority steps back instead: it keeps its place at `ticket`, marked alive (`mark`: 'shared'
-- for a --shared run, '1' otherwise) for `alive_ms`, so that no later waiter can take the node
-- before it looks again (abandon.lua). Either way a wake-up it had is stale.
local function queue_leave_or_keep(queue, prefix, token, ticket, mark, alive_ms)
  if ticket then
    queue_join(queue, token, ticket)
    redis.call('SET', prefix .. token .. ':alive', mark, 'PX', alive_ms)
    redis.call('PEXPIRE', prefix .. token .. ':who', alive_ms)
    -- (A quorum waiter's hand-off arguments, lib/take.lua, last as long as its place.)
    redis.call('PEXPIRE', prefix .. token .. ':take', alive_ms)
    redis.call('DEL', prefix .. token)
  else
    queue_remove(queue, token)
    redis.call('DEL', prefix .. token, prefix .. token .. ':alive', prefix .. token .. ':who',
               prefix .. token .. ':take')
  end
end

-- The longest-waiting run that is still waiting; entries of waiters that died without leaving
-- (their ':alive' mark expired) are dropped on the way.
local function live_head(queue, prefix)
  while true do
    local head = queue_first(queue)
    if not head or redis.call('EXISTS', prefix .. head .. ':alive') == 1 then
      return head
    end
    queue_remove(queue, head)
  end
end

-- Wakes exactly one waiter, the live head (unless that is `except`), with one element on its
-- wake-up list. It stays at the head, and so keeps a free lock reserved, until it has taken the
-- lock. Returns the head.
-- Wakes waiter `w` (a plain wake-up, '1') unless its wake-up list already holds one.
local function wake_once(prefix, w, linger_ms)
  if redis.call('LLEN', prefix .. w) == 0 then
    redis.call('RPUSH', prefix .. w, '1')
    redis.call('PEXPIRE', prefix .. w, linger_ms)
  end
end

local function wake_head(queue, prefix, linger_ms, except)
  local head = live_head(queue, prefix)
  if head and head ~= except then
    redis.call('RPUSH', prefix .. head, '1')
    redis.call('PEXPIRE', prefix .. head, linger_ms)
  end
  return head
end


-- Wakes the waiters that can enter the lock now, and only those (no herd). `free`: nobody holds
-- the lock, so the live head can enter whatever its mode. After a shared head (or from the start
-- when the lock is held shared), every live shared waiter can enter too, up to the first exclusive
-- one: shared runs queued behind a waiting exclusive run stay behind it (writer preference, so a
-- stream of readers cannot starve it). A waiter's mode is its ':alive' mark: 'shared' for a
-- --shared run, anything else ('1') for an exclusive one. A waiter whose wake-up list already
-- holds a wake-up is not given a second one.
local function wake_admissible(queue, prefix, linger_ms, free)
  local i = 0
  while true do
    local w = queue_at(queue, i)
    if not w then return end
    local mode = redis.call('GET', prefix .. w .. ':alive')
    if not mode then
      queue_remove(queue, w)
    else
      if mode ~= 'shared' and not free then return end
      wake_once(prefix, w, linger_ms)
      if mode ~= 'shared' then return end
      free = false
      i = i + 1
    end
  end
end

-- Ends `token`'s hold on lock `key`, never touching someone else's: compare-and-delete (or with
-- keep_ms > 0 shorten it to that, --min-hold, by Redis's clock), then wake the longest-waiting
-- run. One function, so that release.lua and ledger.lua (which releases after recording a run)
-- give the same guarantee. `hand_on(queue, prefix, linger_ms)`, when given, is what a real
-- delete calls instead of wake_head (hand_off_head, lib/take.lua: the free lock handed to the
-- head). Returns 1 released (or shortened), 0 already gone, -1 held by another token (left
-- untouched).
local function release_lock(key, info, queue, token, keep_ms, linger_ms, prefix, hand_on)
  local kind = redis.call('TYPE', key).ok
  if kind ~= 'string' or redis.call('GET', key) ~= token then
    -- The key is no longer ours: it was lost (a restart without persistence, a failover to a
    -- replica that lacked it). A holder left the queue when it took the lock, but a queue copied
    -- from before that (the promoted replica's) can still name it, with its alive mark: the lock
    -- would stay reserved for a run that no longer waits until the mark expires. Take it out, and
    -- wake the new head: it blocked for as long as that mark had left, and must look again (at
    -- a free lock, or at a holder whose TTL is shorter).
    if queue_remove(queue, token) > 0 then
      redis.call('DEL', prefix .. token, prefix .. token .. ':alive', prefix .. token .. ':who',
                 prefix .. token .. ':take')
      wake_head(queue, prefix, linger_ms)
    end
    -- Our holder record, when it outlived the lease (lib/abandoned.lua), goes too: this run did
    -- not die without a trace.
    if redis.pcall('HGET', info, 'token') == token then redis.call('DEL', info) end
    return kind == 'none' and 0 or -1
  end
  local keep = tonumber(keep_ms)
  if keep > 0 then
    redis.call('PEXPIRE', key, keep)
    redis.call('PEXPIRE', info, keep)
    return 1
  end
  redis.call('DEL', key, info)
  -- The waiters are woken only by a real delete.
  if hand_on then
    hand_on(queue, prefix, linger_ms)
  else
    wake_head(queue, prefix, linger_ms)
  end
  return 1
end

-- A run that ended without a trace: prepended at build time to the scripts that take a lock
-- (acquire.lua, permits.lua, shared.lua), which record such a run in the ledger when they take
-- the lock (or the permit) after it, to those that record a run's end (ledger.lua and the
-- 'finish' of permits.lua and shared.lua), and to the ledger readers (history.lua,
-- last_runs.lua), which show it until then.
-- A run with a ledger marks its holder record (the holder-info hash) with the field 'ledger' (its
-- --ledger-size), and that record then has no expiry: it outlives the lease until the run's end
-- is recorded (ledger.lua, or the hand-over of its watchdog) takes the mark away, or until the next
-- holder replaces it. So a marked record whose token no longer holds the lock belongs to a run
-- that died with its watchdog (kill -9 of both, a host that died, a hand-over that could not
-- reach Redis): abandoned. (Or to a run that lost its lock and has not ended yet: its own 'lost'
-- entry replaces this one when it ends, see ledger.lua.)

local function ledger_escape(v)
  return (string.gsub(v, '[\\\t\n]', {['\\'] = '\\\\', ['\t'] = '\\t', ['\n'] = '\\n'}))
end

-- The abandoned run's ledger entry as stored (lock/ledger.cpp's form), and the ledger size it
-- asked for, when the holder record `info` is such a leftover; nil otherwise. `holder` is a token
-- whose record is no leftover (for a reader the lock key's value, false when there is none; for
-- an acquire its own). `now` (ms by this master's clock) is when it is noticed, which is as close
-- to its end as anything knows. The values are the record's, written by the run (the readers
-- range-check every number); only the ledger size is bounded here, as it is used.
local function abandoned_entry(info, holder, now)
  local rec = redis.pcall('HMGET', info, 'token', 'ledger', 'acquired_ms', 'host', 'pid', 'user',
                          'fence')
  if type(rec) ~= 'table' or rec.err or not rec[1] or not rec[2] or rec[1] == holder then
    return nil
  end
  local size = tonumber(rec[2])
  if not size or size < 1 then return nil end
  if size > 10000 then size = 10000 end
  local start = tonumber(rec[3] or '')
  if not start or start < 0 or start > now then start = now end
  start = math.floor(start)
  local entry = string.format('end_ms=%d\tstart_ms=%d\toutcome=abandoned\tduration_ms=%d', now,
                              start, now - start)
  local names = {'host', 'pid', 'user', 'fence'}
  for i = 1, #names do
    entry = entry .. '\t' .. names[i] .. '=' .. ledger_escape(rec[3 + i] or '')
  end
  return entry, math.floor(size)
end

-- Appends a ledger entry (of an abandoned run) to the run ledger `ledger`, kept to `size`
-- entries; a key of another type is left alone (the run's own end would report it).
local function record_abandoned(ledger, entry, size)
  local kind = redis.call('TYPE', ledger).ok
  if kind == 'none' or kind == 'list' then
    redis.call('LPUSH', ledger, entry)
    redis.call('LTRIM', ledger, 0, size - 1)
  end
end

-- ---- Permits and shared holds (permits.lua, shared.lua) ----
-- Their holder records are one per permit (P .. i .. ':info') or per shared holder (H .. token),
-- so a reader could not know which to look at once the lock key is gone: a marked record is
-- also named in the lock's set of open runs (LockKeys::open), which tells where to look. A name
-- in it whose record is gone or no longer marked is only stale, and cleared on the way.

-- The token that still holds what the record `record` (a permit's or a shared holder's) is
-- about, or false: for a permit (its record names it) the permit key's value, P .. i; for a
-- shared holder its token while its end in the holders set `holders` is after `now`.
local function live_token(record, P, holders, now)
  local rec = redis.pcall('HMGET', record, 'token', 'permit')
  if type(rec) ~= 'table' or rec.err or not rec[1] then return false end
  if rec[2] then
    local v = redis.pcall('GET', P .. rec[2])
    return type(v) == 'string' and v
  end
  local ends = redis.pcall('ZSCORE', holders, rec[1])
  return type(ends) == 'string' and tonumber(ends) and tonumber(ends) > now and rec[1]
end

-- For the readers: the entries of the abandoned runs the set of open runs `open` names, newest
-- noticed first (all at `now`). Read-only.
local function open_entries(open, P, holders, now)
  local entries = {}
  if redis.call('TYPE', open).ok ~= 'set' then return entries end
  for _, record in ipairs(redis.call('SMEMBERS', open)) do
    local entry = abandoned_entry(record, live_token(record, P, holders, now), now)
    if entry then entries[#entries + 1] = entry end
  end
  return entries
end

-- For a run that takes the lock when no one holds it (no permit, no shared holder): every run
-- the set `open` names, but `token` (this run's own, from an earlier attempt whose reply was
-- lost), ended without a trace, so it goes into `ledger` as abandoned; its record goes, and so
-- does the set. One SMEMBERS, of a set that is normally gone (a key of another type: nothing).
local function record_open(open, ledger, now, token)
  local records = redis.pcall('SMEMBERS', open)
  if type(records) ~= 'table' or records.err or #records == 0 then return end
  for _, record in ipairs(records) do
    local entry, size = abandoned_entry(record, token, now)
    if entry then
      record_abandoned(ledger, entry, size)
      redis.call('DEL', record)
    end
  end
  redis.call('DEL', open)
end

-- A run's end is recorded: its record `record` (when still its token's) tells of no abandoned
-- run any more. With `keep_ms` > 0 (--min-hold, the hold shortened to that) it stays for status,
-- unmarked, and expires then; else it goes. Its name leaves `open`. (pcall throughout: called
-- after a release, which nothing may undo.)
local function settle_record(record, token, open, keep_ms)
  if redis.pcall('HGET', record, 'token') == token then
    if keep_ms > 0 then
      redis.pcall('HDEL', record, 'ledger')
      redis.pcall('PEXPIRE', record, keep_ms)
    else
      redis.pcall('DEL', record)
    end
  end
  redis.pcall('SREM', open, record)
end

-- A run that lost its lock may have been taken for abandoned meanwhile (its lease ran out and the
-- next holder recorded it); its own entry, just written, says how it really ended, so that guess
-- goes. Found by its fence (unique per lock) among the `size` entries after the newest; only on
-- this rare path. `fence` may be nil (nothing to find).
local function drop_abandoned_guess(ledger, fence, size)
  if not fence or size <= 0 or redis.call('TYPE', ledger).ok ~= 'list' then return end
  local suffix = '\tfence=' .. fence
  for _, e in ipairs(redis.call('LRANGE', ledger, 1, size)) do
    if string.find(e, '\toutcome=abandoned\t', 1, true) and string.sub(e, -#suffix) == suffix then
      redis.call('LREM', ledger, 1, e)
      return
    end
  end
end

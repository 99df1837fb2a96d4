-- A run that ended without a trace: prepended at build time to the scripts that take a lock
-- (acquire.lua, permits.lua, shared.lua), which record such a run in the ledger when they take
-- the lock (or the permit) after it, to those that record a run's end (ledger.lua and the
-- 'finish' of permits.lua and shared.lua), and to the ledger readers (history.lua,
-- last_runs.lua), which show it until then. What only permits and shared holds need is in
-- lib/open_runs.lua, which acquire.lua, the plain lock's hot path, does not get.
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

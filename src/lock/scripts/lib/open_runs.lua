-- The abandoned runs of permit and shared holders (lib/abandoned.lua says what an abandoned run
-- is), and the end of a run that may have been taken for one: prepended at build time after
-- lib/abandoned.lua to permits.lua, shared.lua, ledger.lua and the ledger readers (history.lua,
-- last_runs.lua).
-- Permit and shared holders' records are one per permit (P .. i .. ':info') or per shared holder
-- (H .. token), so a reader could not know which to look at once the lock key is gone: a marked
-- record is also named in the lock's set of open runs (LockKeys::open), which tells where to look.
-- A name in it whose record is gone or no longer marked is only stale, and cleared on the way.

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
-- unmarked, and expires then; else it goes. Its name leaves `open`, unless the record is another
-- run's by now (a permit this release handed on in the same step, permits.lua's hand_permit, or
-- one taken after ours ran out): that run's record is still open. (pcall throughout: called
-- after a release, which nothing may undo.)
local function settle_record(record, token, open, keep_ms)
  local owner = redis.pcall('HGET', record, 'token')
  if owner == token then
    if keep_ms > 0 then
      redis.pcall('HDEL', record, 'ledger')
      redis.pcall('PEXPIRE', record, keep_ms)
    else
      redis.pcall('DEL', record)
    end
  end
  if type(owner) ~= 'string' or owner == token then redis.pcall('SREM', open, record) end
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

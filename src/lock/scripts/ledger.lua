-- Records a finished run and, after a run that held the lock, releases it, in one step and one
-- round trip: the run ledger entry, the --once-per slot it completed, then the release. A waiter
-- that takes the lock next already sees the slot done. lib/queue.lua, lib/ledger.lua,
-- lib/abandoned.lua, lib/open_runs.lua, lib/take.lua and lib/share.lua are prepended. (A permit or a shared hold is given
-- back and recorded by the 'finish' operation of permits.lua or shared.lua, with the same record
-- and the same reply.)
-- KEYS[1] lock key, KEYS[2] ledger list, KEYS[3] once-per record, KEYS[4] holder-info hash,
-- KEYS[5] waiters' queue, KEYS[6] fence counter when given (then the free lock is handed to the
-- queue's head when it asked for that: hand_off_head, lib/take.lua); KEYS[7] the shared holders
-- and KEYS[8] the set of open runs, when given too (readers at the head are handed the shared
-- hold: hand_free_lock, lib/share.lua) (all in one slot).
-- ARGV[1] the run's token ('' when it never held the lock); ARGV[2..8] the record (see
-- record_run in lib/ledger.lua); ARGV[9] '' (record only) or keep_ms for the release (see
-- release.lua); ARGV[10] how long an unclaimed wake-up may linger (ms); ARGV[11] the prefix of
-- the waiters' keys; ARGV[12..] the record's other field/value pairs.
-- Returns {now_ms, held (1/0), slot written (1/0), release (1, 0 or -1 as release.lua; 2 when
-- not asked), what kept the record from being written ('' when nothing did)}.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local token = ARGV[1]
local held = false
if token ~= '' and redis.call('TYPE', KEYS[1]).ok == 'string' then
  held = redis.call('GET', KEYS[1]) == token
end

-- The release first, exactly as release.lua does it, so that nothing the record meets below (a
-- key of the wrong type, a full server) can keep the lock from being given back. The record is
-- still written in this same atomic step: no one else can take the lock in between.
local released = 2
if ARGV[9] ~= '' then
  released = release_lock(KEYS[1], KEYS[4], KEYS[5], token, ARGV[9], ARGV[10], ARGV[11],
                          hand_on_free(KEYS[1], KEYS[6], KEYS[4], KEYS[2], KEYS[7], KEYS[8], token))
end

local marked, problem = record_run(KEYS[2], KEYS[3], now, token ~= '', held, 2, 12)

-- The run's end is recorded, so its holder record, marked while it held the lock
-- (lib/abandoned.lua), tells of no abandoned run any more: gone with the release; under
-- --min-hold kept for status but unmarked, expiring with the lock; deleted when the lock was no
-- longer ours. (pcall throughout: nothing here may undo the release above.)
if token ~= '' and redis.pcall('HGET', KEYS[4], 'token') == token then
  local pttl = held and redis.call('PTTL', KEYS[1]) or -2
  if pttl > 0 then
    redis.pcall('HDEL', KEYS[4], 'ledger')
    redis.pcall('PEXPIRE', KEYS[4], pttl)
  else
    redis.pcall('DEL', KEYS[4])
  end
end
-- A run that lost its lock may have been taken for abandoned meanwhile (acquire.lua); its own
-- entry, just written, replaces that guess (lib/open_runs.lua).
if token ~= '' and not held then
  local fence = nil
  for i = 12, #ARGV - 1, 2 do
    if ARGV[i] == 'fence' then fence = ARGV[i + 1] end
  end
  drop_abandoned_guess(KEYS[2], fence, tonumber(ARGV[3]) or 0)
end
return {string.format('%d', now), held and 1 or 0, marked, released, problem}

-- Records a finished run and, after a run that held the lock, releases it, in one step and one
-- round trip: the run ledger entry, the --once-per slot it completed, then the release. A waiter
-- that takes the lock next already sees the slot done.
-- KEYS[1] lock key, KEYS[2] ledger list, KEYS[3] once-per record, KEYS[4] holder-info hash,
-- KEYS[5] waiters' queue (all in one slot).
-- ARGV[1] the run's token ('' when it never held the lock); ARGV[2] outcome; ARGV[3] ledger size
-- (0: no entry); ARGV[4] the entry's other fields, encoded (lock/ledger.hpp); ARGV[5] the run's
-- duration in ms; ARGV[6] '' (no slot to mark), 'ok' (mark it when the run ran and still holds
-- the lock) or 'any' (mark it whatever the outcome); ARGV[7] the slot; ARGV[8] the record's TTL
-- in ms; ARGV[9] '' (record only) or keep_ms for the release (see release.lua); ARGV[10] how
-- long an unclaimed wake-up may linger (ms); ARGV[11] the prefix of the waiters' keys;
-- ARGV[12..] the record's other field/value pairs.
-- Returns {now_ms, held (1/0), slot written (1/0), release (1, 0 or -1 as release.lua; 2 when
-- not asked), what kept the record from being written ('' when nothing did)}.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local token = ARGV[1]
local held = false
if token ~= '' and redis.call('TYPE', KEYS[1]).ok == 'string' then
  held = redis.call('GET', KEYS[1]) == token
end
local outcome = ARGV[2]
-- The token is gone: whatever the command did, it did without the lock for a while.
if token ~= '' and not held and outcome == 'ran' then outcome = 'lost' end

-- The release first, exactly as release.lua does it, so that nothing the record meets below (a
-- key of the wrong type, a full server) can keep the lock from being given back. The record is
-- still written in this same atomic step: no one else can take the lock in between.
local released = 2
if ARGV[9] ~= '' then
  released = release_lock(KEYS[1], KEYS[4], KEYS[5], token, ARGV[9], ARGV[10], ARGV[11])
end

-- The record never fails the script: a problem is reported in the reply, as a warning.
local problem = ''
local function try(...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err and problem == '' then problem = r.err end
  return r
end

local marked = 0
if ARGV[6] == 'any' or (ARGV[6] == 'ok' and held and outcome == 'ran') then
  local kind = redis.call('TYPE', KEYS[3]).ok
  if kind ~= 'none' and kind ~= 'hash' then
    problem = 'WRONGTYPE the once-per record ' .. KEYS[3] .. ' holds a ' .. kind
  else
    -- Never back to an older slot (a clock that stepped back on the lock's node).
    local prev = tonumber(redis.call('HGET', KEYS[3], 'slot'))
    if not prev or prev <= tonumber(ARGV[7]) then
      try('DEL', KEYS[3])
      local fields = {'slot', ARGV[7], 'end_ms', string.format('%d', now), 'outcome', outcome}
      for i = 12, #ARGV do fields[#fields + 1] = ARGV[i] end
      local r = try('HSET', KEYS[3], unpack(fields))
      if type(r) == 'number' then
        try('PEXPIRE', KEYS[3], ARGV[8])
        marked = 1
      end
    end
  end
end

local size = tonumber(ARGV[3])
if size > 0 then
  local kind = redis.call('TYPE', KEYS[2]).ok
  if kind ~= 'none' and kind ~= 'list' then
    if problem == '' then
      problem = 'WRONGTYPE the run ledger ' .. KEYS[2] .. ' holds a ' .. kind
    end
  else
    local entry = string.format('end_ms=%d\tstart_ms=%d\toutcome=%s\t', now,
                                now - tonumber(ARGV[5]), outcome) .. ARGV[4]
    try('LPUSH', KEYS[2], entry)
    try('LTRIM', KEYS[2], 0, size - 1)
  end
end
return {string.format('%d', now), held and 1 or 0, marked, released, problem}

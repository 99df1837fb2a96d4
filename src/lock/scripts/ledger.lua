-- Records a finished run in one step, before its lock is released: the run ledger entry and,
-- with --once-per, the slot it completed. Written while the lock is still ours, so a waiter that
-- takes it next already sees the slot done.
-- KEYS[1] lock key, KEYS[2] ledger list, KEYS[3] once-per record (all in one slot).
-- ARGV[1] the run's token ('' when it never held the lock); ARGV[2] outcome; ARGV[3] ledger size
-- (0: no entry); ARGV[4] the entry's other fields, encoded (lock/ledger.hpp); ARGV[5] the run's
-- duration in ms; ARGV[6] '' (no slot to mark), 'ok' (mark it when the run ran and still holds
-- the lock) or 'any' (mark it whatever the outcome); ARGV[7] the slot; ARGV[8] the record's TTL
-- in ms; ARGV[9..] the record's other field/value pairs.
-- Returns {now_ms, held (1/0), slot written (1/0)}.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local held = false
if ARGV[1] ~= '' and redis.call('TYPE', KEYS[1]).ok == 'string' then
  held = redis.call('GET', KEYS[1]) == ARGV[1]
end
local outcome = ARGV[2]
-- The token is gone: whatever the command did, it did without the lock for a while.
if ARGV[1] ~= '' and not held and outcome == 'ran' then outcome = 'lost' end

local marked = 0
if ARGV[6] == 'any' or (ARGV[6] == 'ok' and held and outcome == 'ran') then
  local kind = redis.call('TYPE', KEYS[3]).ok
  if kind ~= 'none' and kind ~= 'hash' then
    return redis.error_reply('WRONGTYPE the once-per record ' .. KEYS[3] .. ' holds a ' .. kind)
  end
  -- Never back to an older slot (a clock that stepped back on the lock's node).
  local prev = tonumber(redis.call('HGET', KEYS[3], 'slot'))
  if not prev or prev <= tonumber(ARGV[7]) then
    redis.call('DEL', KEYS[3])
    local fields = {'slot', ARGV[7], 'end_ms', string.format('%d', now), 'outcome', outcome}
    for i = 9, #ARGV do fields[#fields + 1] = ARGV[i] end
    redis.call('HSET', KEYS[3], unpack(fields))
    redis.call('PEXPIRE', KEYS[3], ARGV[8])
    marked = 1
  end
end

local size = tonumber(ARGV[3])
if size > 0 then
  local kind = redis.call('TYPE', KEYS[2]).ok
  if kind ~= 'none' and kind ~= 'list' then
    return redis.error_reply('WRONGTYPE the run ledger ' .. KEYS[2] .. ' holds a ' .. kind)
  end
  local entry = string.format('end_ms=%d\tstart_ms=%d\toutcome=%s\t', now,
                              now - tonumber(ARGV[5]), outcome) .. ARGV[4]
  redis.call('LPUSH', KEYS[2], entry)
  redis.call('LTRIM', KEYS[2], 0, size - 1)
end
return {string.format('%d', now), held and 1 or 0, marked}

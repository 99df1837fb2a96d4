-- What a waiter's live status line shows (waiter.cpp), read in one step while it waits: the
-- holder's TTL, the waiter's place in the queue and the holder's info. Read-only, and small: it
-- runs at most once a second, and only while a terminal is watching.
-- KEYS[1] lock key, KEYS[2] holder-info hash, KEYS[3] waiters' queue (all in one slot).
-- ARGV[1] the waiter's token.
-- Returns {pttl, place, info...}: pttl as PTTL (-2 no lock), place the waiter's 1-based position
-- in the queue (0: not in it), info the holder-info field/value list when it belongs to the
-- current token, followed by the pseudo-field 'now_ms' (Redis's clock); the pseudo-field
-- 'shared' '1' when shared holders (shared.lua's marker) hold it; else empty.
local reply = {redis.call('PTTL', KEYS[1]), 0}
local place = redis.call('LPOS', KEYS[3], ARGV[1])
if place then reply[2] = place + 1 end
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'string' and redis.call('GET', KEYS[1]) == 'redlock-shared' then
  reply[3] = 'shared'
  reply[4] = '1'
elseif kind == 'string' and redis.call('TYPE', KEYS[2]).ok == 'hash'
    and redis.call('HGET', KEYS[2], 'token') == redis.call('GET', KEYS[1]) then
  local info = redis.call('HGETALL', KEYS[2])
  for i = 1, #info do reply[#reply + 1] = info[i] end
  local now = redis.call('TIME')
  reply[#reply + 1] = 'now_ms'
  reply[#reply + 1] = tostring(now[1] * 1000 + math.floor(now[2] / 1000))
end
return reply

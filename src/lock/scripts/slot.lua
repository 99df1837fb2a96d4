-- --once-per: Redis's clock and the latest completed slot of a lock, read in one step by a run
-- that holds the lock (so no run of the lock can complete a slot meanwhile).
-- KEYS[1] the once-per record (a hash in the lock's slot).
-- Returns {now_ms, field, value, ...}: the record's fields, none when there is no record.
local t = redis.call('TIME')
local reply = {tostring(t[1] * 1000 + math.floor(t[2] / 1000))}
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'hash' then
  local fields = redis.call('HGETALL', KEYS[1])
  for i = 1, #fields do reply[#reply + 1] = fields[i] end
elseif kind ~= 'none' then
  return redis.error_reply('WRONGTYPE the once-per record ' .. KEYS[1] .. ' holds a ' .. kind)
end
return reply

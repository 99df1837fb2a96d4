-- For history: the newest entries of a run ledger, with a run that was abandoned and not yet
-- recorded (lib/abandoned.lua) first, in one step. Read-only.
-- KEYS[1] the ledger list, KEYS[2] the lock key, KEYS[3] its holder-info hash (all in one slot).
-- ARGV[1] how many entries at most (1..).
-- Returns the entries as stored, newest first.
local limit = tonumber(ARGV[1])
local now = redis.call('TIME')
local abandoned = abandoned_entry(KEYS[3], redis.pcall('GET', KEYS[2]),
                                  now[1] * 1000 + math.floor(now[2] / 1000))
local entries = {}
if abandoned then
  entries[1] = abandoned
  limit = limit - 1
end
if limit > 0 then
  local kept = redis.call('LRANGE', KEYS[1], 0, limit - 1)
  for i = 1, #kept do entries[#entries + 1] = kept[i] end
end
return entries

-- For history: the newest entries of a run ledger, with the runs that were abandoned and not yet
-- recorded (lib/abandoned.lua) first, in one step. Read-only.
-- KEYS[1] the ledger list, KEYS[2] the lock key, KEYS[3] its holder-info hash, KEYS[4] the set of
-- open runs (lib/open_runs.lua), KEYS[5] the shared holders (all in one slot).
-- ARGV[1] how many entries at most (1..), ARGV[2] the permits' key prefix (permits.lua).
-- Returns the entries as stored, newest first.
local limit = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local entries = open_entries(KEYS[4], ARGV[2], KEYS[5], now)
local abandoned = abandoned_entry(KEYS[3], redis.pcall('GET', KEYS[2]), now)
if abandoned then table.insert(entries, 1, abandoned) end
while #entries > limit do table.remove(entries) end
limit = limit - #entries
if limit > 0 then
  local kept = redis.call('LRANGE', KEYS[1], 0, limit - 1)
  for i = 1, #kept do entries[#entries + 1] = kept[i] end
end
return entries

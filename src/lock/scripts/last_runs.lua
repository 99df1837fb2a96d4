-- For status and list --ledger: the newest entry of a run ledger and the newest successful one
-- (outcome 'ran', exit 0), in one step, so that the reply stays two entries long however long
-- the ledger is (up to --ledger-size 10000).
-- KEYS[1] the ledger list, KEYS[2] the lock key, KEYS[3] its holder-info hash, KEYS[4] the set of
-- open runs (lib/open_runs.lua), KEYS[5] the shared holders (all in one slot); ARGV[1] the
-- permits' key prefix (permits.lua).
-- Returns {newest or false, newest success or false}. A run that was abandoned and not yet
-- recorded (lib/abandoned.lua) is the newest.
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local abandoned = abandoned_entry(KEYS[3], redis.pcall('GET', KEYS[2]), now) or
                  open_entries(KEYS[4], ARGV[1], KEYS[5], now)[1]
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then return {abandoned or false, false} end
if kind ~= 'list' then
  return redis.error_reply('WRONGTYPE the run ledger ' .. KEYS[1] .. ' holds a ' .. kind)
end
local entries = redis.call('LRANGE', KEYS[1], 0, -1)
if abandoned then table.insert(entries, 1, abandoned) end
local success = false
for i = 1, #entries do
  -- Fields are tab-separated and values escape their tabs (lock/ledger.cpp), so a field is found
  -- between tabs or at an end, never inside a value.
  local e = '\t' .. entries[i] .. '\t'
  if string.find(e, '\toutcome=ran\t', 1, true) and string.find(e, '\texit=0\t', 1, true) then
    success = entries[i]
    break
  end
end
return {entries[1] or false, success}

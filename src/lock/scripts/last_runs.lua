-- For status and list --ledger: the newest entry of a run ledger and the newest successful one
-- (outcome 'ran', exit 0), in one step, so that the reply stays two entries long however long
-- the ledger is (up to --ledger-size 10000).
-- KEYS[1] the ledger list.
-- Returns {newest or false, newest success or false}.
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then return {false, false} end
if kind ~= 'list' then
  return redis.error_reply('WRONGTYPE the run ledger ' .. KEYS[1] .. ' holds a ' .. kind)
end
local entries = redis.call('LRANGE', KEYS[1], 0, -1)
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

-- For status: the waiters in a lock's queue, longest waiting first, each with its mode and who it
-- is, in one read-only step. Reads at most ARGV[2] entries, so a long queue costs a bounded reply.
-- KEYS[1] waiters' queue (a list, or a quorum's sorted set; lib/queue.lua).
-- ARGV[1] the prefix of the waiters' keys, ARGV[2] how many entries to read at most.
-- Returns {now_ms, total, mode, who, mode, who, ...}: Redis's clock, the queue's length (dead
-- entries included), then per live waiter its ':alive' mark ('shared' for a --shared run, else
-- exclusive) and its ':who' record ('<since_ms> <pid> <host>', lib/queue.lua) or false (a waiter
-- of a version that wrote none). Entries whose mark has expired (dead waiters) are left out.
local kind = redis.call('TYPE', KEYS[1]).ok
local max = tonumber(ARGV[2])
local entries, total = {}, 0
if kind == 'list' then
  entries = redis.call('LRANGE', KEYS[1], 0, max - 1)
  total = redis.call('LLEN', KEYS[1])
elseif kind == 'zset' then
  entries = redis.call('ZRANGE', KEYS[1], 0, max - 1)
  total = redis.call('ZCARD', KEYS[1])
elseif kind ~= 'none' then
  return redis.error_reply('WRONGTYPE the waiters\' queue ' .. KEYS[1] .. ' holds a ' .. kind)
end
local t = redis.call('TIME')
local reply = {t[1] .. string.format('%03d', math.floor(tonumber(t[2]) / 1000)), total}
for i = 1, #entries do
  -- Under pcall: a key of another type in their place is no waiter's, not a reason to fail.
  local mark = redis.pcall('GET', ARGV[1] .. entries[i] .. ':alive')
  if type(mark) == 'string' then
    local who = redis.pcall('GET', ARGV[1] .. entries[i] .. ':who')
    reply[#reply + 1] = mark
    reply[#reply + 1] = type(who) == 'string' and who or false
  end
end
return reply

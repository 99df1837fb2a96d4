-- Deletes the lock only when it holds our token, never someone else's.
-- KEYS[1] lock key, KEYS[2..] companions deleted with it (never the fence counter); ARGV[1] token.
-- Returns 1 released, 0 already gone, -1 held by another token (left untouched).
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'none' then
  return 0
end
if kind ~= 'string' or redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
redis.call('DEL', unpack(KEYS))
return 1

-- Extends the lock only while it still holds our token; companions (KEYS[2..]) that expire get
-- the same TTL.
-- KEYS[1] lock key; ARGV[1] token, ARGV[2] ttl in ms. Returns 1 when extended, 0 when not ours.
if redis.call('TYPE', KEYS[1]).ok ~= 'string' or redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
for i = 1, #KEYS do
  -- A companion without expiry keeps none: a holder record marked for the ledger outlives the
  -- lease on purpose (lib/abandoned.lua).
  if i == 1 or redis.call('PTTL', KEYS[i]) ~= -1 then redis.call('PEXPIRE', KEYS[i], ARGV[2]) end
end
return 1

-- Ends our hold on the lock, never touching someone else's (release_lock, lib/queue.lua).
-- KEYS[1] lock key, KEYS[2] holder-info hash, KEYS[3] waiters' queue; KEYS[4] fence counter and
-- KEYS[5] run ledger, when given: the free lock is handed to the queue's head when it asked for
-- that (hand_off_head, lib/take.lua); KEYS[6] the shared holders and KEYS[7] the set of open
-- runs, when given too: readers at the head are handed the shared hold (hand_free_lock,
-- lib/share.lua).
-- ARGV[1] token; ARGV[2] keep_ms: 0 deletes now, >0 keeps the lock that much longer instead
-- (--min-hold, enforced by Redis's clock); ARGV[3] how long an unclaimed wake-up may linger (ms);
-- ARGV[4] the prefix of the waiters' keys (see lib/queue.lua).
-- Returns 1 released (or shortened), 0 already gone, -1 held by another token (left untouched).
return release_lock(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2], ARGV[3], ARGV[4],
                    hand_on_free(KEYS[1], KEYS[4], KEYS[2], KEYS[5], KEYS[6], KEYS[7], ARGV[1]))

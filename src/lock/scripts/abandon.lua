-- Gives up on a lock without leaving anything of ours behind: a run that stops waiting (a signal,
-- its --wait ran out) or that could not learn the outcome of its acquire (the reply was lost, so
-- the lock may be ours) deletes the lock if it holds our token (compare-and-delete), leaves the
-- waiters' queue, and passes on a wake-up it may have been given, so that the next waiter does
-- not sleep until its own bound runs out.
-- With a ticket it steps back instead: a quorum waiter that took this node but no majority gives
-- the node back and keeps its place at that ticket, in the same atomic step, so that no later
-- waiter can take the node in between (QuorumLock::acquire).
-- With 'queue-only' it only leaves the queue: a quorum waiter that holds the lock on a majority
-- leaves the queues of the other nodes, and keeps its key on any of them that took it late.
-- KEYS[1] lock key, KEYS[2] holder-info hash, KEYS[3] waiters' queue.
-- ARGV[1] token, ARGV[2] how long a wake-up may linger (ms), ARGV[3] the prefix of the waiters'
-- keys (see lib/queue.lua); ARGV[4] absent (abandon), 'queue-only', or the ticket to keep when
-- stepping back, then ARGV[5] how long its ':alive' mark lasts (ms).
-- Returns 1 when it deleted our lock, else 0.

local token, mode = ARGV[1], ARGV[4]
local queue_only = mode == 'queue-only'
local ticket = not queue_only and mode or nil
queue_leave_or_keep(KEYS[3], ARGV[3], token, ticket, '1', ARGV[5])
local deleted = 0
local kind = redis.call('TYPE', KEYS[1]).ok
if kind == 'string' and redis.call('GET', KEYS[1]) == token then
  if queue_only then return 0 end
  redis.call('DEL', KEYS[1], KEYS[2])
  deleted = 1
elseif kind ~= 'none' then
  -- Held by shared holders (shared.lua): the shared waiters that queued behind us (writer
  -- preference) may enter now, unless another exclusive waiter is ahead of them.
  if kind == 'string' and redis.call('GET', KEYS[1]) == 'redlock-shared' then
    wake_admissible(KEYS[3], ARGV[3], ARGV[2], false)
  end
  return 0
end
-- The lock is free: it may be reserved for us as the queue's head, or we may have taken a
-- wake-up meant for whoever is next; either way the next live waiter must hear of it (not us,
-- stepping back: we are about to look again anyway).
wake_head(KEYS[3], ARGV[3], ARGV[2], token)
return deleted

-- What a finished run leaves beside its lock, prepended at build time to the scripts that record
-- one (ledger, and the 'finish' operations of permits and shared, which give back a permit or a
-- shared hold and record the run in the same step): the --once-per slot it completed and its
-- entry in the run ledger.

-- Records a finished run at `now` (ms by this master's clock) in the once-per record `once` and
-- the ledger `ledger`. ARGV from `o` on is the record as lock/ledger.cpp sends it (record_args):
-- ARGV[o] outcome, ARGV[o+1] ledger size (0: no entry), ARGV[o+2] the entry's other fields,
-- encoded (lock/ledger.hpp), ARGV[o+3] the run's duration in ms, ARGV[o+4] '' (no slot to
-- mark), 'ok' (mark it when the run ran and still holds the lock) or 'any' (mark it whatever the
-- outcome), ARGV[o+5] the slot, ARGV[o+6] the once-per record's TTL in ms; ARGV[fields..] the
-- record's other field/value pairs. `judged`: the run held the lock, and `held` says whether it
-- still did at its end (by the caller's own test of its token, taken before any release).
-- The record never fails the script, so that it can follow a release in the same script without
-- ever undoing it or keeping it from being answered: a problem is returned as a warning.
-- Returns whether the slot was marked (1/0) and what kept the record from being written ('' when
-- nothing did).
local function record_run(ledger, once, now, judged, held, o, fields)
  local outcome = ARGV[o]
  -- The token is gone: whatever the command did, it did without the lock for a while.
  if judged and not held and outcome == 'ran' then outcome = 'lost' end

  local problem = ''
  local function try(...)
    local r = redis.pcall(...)
    if type(r) == 'table' and r.err and problem == '' then problem = r.err end
    return r
  end

  local marked = 0
  local mode = ARGV[o + 4]
  if mode == 'any' or (mode == 'ok' and held and outcome == 'ran') then
    local kind = redis.call('TYPE', once).ok
    if kind ~= 'none' and kind ~= 'hash' then
      problem = 'WRONGTYPE the once-per record ' .. once .. ' holds a ' .. kind
    else
      -- Never back to an older slot (a clock that stepped back on the lock's node). By the
      -- slots' start times when both records have one (start_ms, among the field/value pairs),
      -- as acquire.lua compares them: slot numbers of two periods do not compare.
      local start = nil
      for i = fields, #ARGV - 1, 2 do
        if ARGV[i] == 'start_ms' then start = tonumber(ARGV[i + 1]) end
      end
      local prev = redis.call('HMGET', once, 'slot', 'start_ms')
      local prev_slot, prev_start = tonumber(prev[1] or ''), tonumber(prev[2] or '')
      local newer
      if prev_start and start then
        newer = prev_start <= start
      else
        newer = not prev_slot or prev_slot <= tonumber(ARGV[o + 5])
      end
      if newer then
        try('DEL', once)
        local record = {'slot', ARGV[o + 5], 'end_ms', string.format('%d', now),
                        'outcome', outcome}
        for i = fields, #ARGV do record[#record + 1] = ARGV[i] end
        local r = try('HSET', once, unpack(record))
        if type(r) == 'number' then
          try('PEXPIRE', once, ARGV[o + 6])
          marked = 1
        end
      end
    end
  end

  local size = tonumber(ARGV[o + 1])
  if size > 0 then
    local kind = redis.call('TYPE', ledger).ok
    if kind ~= 'none' and kind ~= 'list' then
      if problem == '' then
        problem = 'WRONGTYPE the run ledger ' .. ledger .. ' holds a ' .. kind
      end
    else
      local entry = string.format('end_ms=%d\tstart_ms=%d\toutcome=%s\t', now,
                                  now - tonumber(ARGV[o + 3]), outcome) .. ARGV[o + 2]
      try('LPUSH', ledger, entry)
      try('LTRIM', ledger, 0, size - 1)
    end
  end
  return marked, problem
end

#!/usr/bin/env bats
# --once-per: exactly one completed run per schedule slot of Redis's clock, whatever the local
# clocks say (shifted by minutes with libfaketime), with --wait, after failures, on a quorum and
# on a cluster.
load helpers
bats_require_minimum_version 1.5.0

setup() { redis_start; }
teardown() {
    rl_cleanup
    [ -z "${Q_PORT:-}" ] || quorum_stop
    [ -z "${CLUSTER_PIDS:-}" ] || cluster_stop
    redis_stop
}

# Redis's clock in ms on the test server.
redis_ms() { cli "$REDIS_PORT" TIME | { read -r s && read -r us && echo $((s * 1000 + us / 1000)); }; }

# A --slot-offset (in ms) that puts Redis's clock now in the middle of a PERIOD_MS slot, so that
# a test never straddles a slot boundary.
mid_slot_offset() { echo $((($(redis_ms) - $1 / 2) % $1))ms; }

# A job that logs "start PID SLOT" and "end PID SLOT" to $1/log, then exits with $2 (default 0).
job() { printf 'echo "start $$ $REDLOCK_SLOT" >> %q/log; %s; echo "end $$ $REDLOCK_SLOT" >> %q/log; exit %s' \
    "$1" "${3:-true}" "$1" "${2:-0}"; }

# shifted OFFSET COMMAND...: COMMAND with its clock shifted by OFFSET (libfaketime). Under
# AddressSanitizer, whose runtime must otherwise be the first library loaded, the preloaded
# libfaketime is allowed ahead of it.
shifted() {
    local offset=$1
    shift
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" faketime -f "$offset" "$@"
}

@test "processes whose local clocks are minutes apart run the job once in the slot" {
    command -v faketime || skip "faketime not installed (tests/deps.sh)"
    local d=$BATS_TEST_TMPDIR off i pids=()
    off=$(mid_slot_offset 3600000)
    # Concurrent contenders with clocks 5 minutes behind to 7 minutes ahead; they wait their turn.
    for i in -5m -2m +0m +2m +7m; do
        (
            rc=0
            shifted "$i" "$RL" --once-per 1h --slot-offset "$off" -w 20s job \
                -c "$(job "$d" 0 'sleep 0.2')" 2>>"$d/err.$i" || rc=$?
            echo "$rc" > "$d/rc.$i"
        ) &
        pids+=($!)
    done
    wait "${pids[@]}"
    # Later, one at a time, with other shifts still.
    for i in -3m +4m; do
        run -75 shifted "$i" "$RL" --once-per 1h --slot-offset "$off" job -c "$(job "$d")"
        assert_output --partial "was already done on $(hostname)"
    done
    [ "$(starts_in "$d/log")" -eq 1 ]
    [ "$(grep -c '^end' "$d/log")" -eq 1 ]
    [ "$(cat "$d"/rc.* | sort | uniq -c | tr -s ' ')" = "$(printf ' 1 0\n 4 75')" ]
}

@test "contenders looping over many short slots run the job exactly once in each slot" {
    command -v faketime || skip "faketime not installed (tests/deps.sh)"
    local d=$BATS_TEST_TMPDIR i pids=() end=$((SECONDS + 5))
    for i in -90s +0s +150s; do
        (
            while [ "$SECONDS" -lt "$end" ]; do
                shifted "$i" "$RL" --once-per 1s -w 2s -q loop -c "$(job "$d")" 2>>"$d/err" || true
            done
        ) &
        pids+=($!)
    done
    wait "${pids[@]}"
    # The checker, over the commands' own log: no slot ran twice, and runs never overlapped.
    [ -z "$(grep '^start' "$d/log" | awk '{print $3}' | sort | uniq -d)" ]
    [ "$(grep '^start' "$d/log" | awk '{print $3}' | sort -u | wc -l)" -ge 3 ]
    awk '/^start/ { if (open) exit 1; open = 1 } /^end/ { open = 0 }' "$d/log"
}

@test "a failed run leaves the slot open: a later run of the slot goes ahead" {
    local d=$BATS_TEST_TMPDIR off
    off=$(mid_slot_offset 3600000)
    run -3 "$RL" --once-per 1h --slot-offset "$off" job -c "$(job "$d" 3)"
    run -0 "$RL" --once-per 1h --slot-offset "$off" job -c "$(job "$d" 0)"
    run -75 "$RL" --once-per 1h --slot-offset "$off" job -c "$(job "$d" 0)"
    [ "$(starts_in "$d/log")" -eq 2 ]
}

@test "--once-per-any-result: a failed run uses up its slot" {
    local d=$BATS_TEST_TMPDIR off
    off=$(mid_slot_offset 3600000)
    run -3 "$RL" --once-per 1h --slot-offset "$off" --once-per-any-result job -c "$(job "$d" 3)"
    run -75 "$RL" --once-per 1h --slot-offset "$off" job -c "$(job "$d" 0)"
    assert_output --partial "ran, exit 3"
    [ "$(starts_in "$d/log")" -eq 1 ]
}

@test "a lost lock does not use up the slot" {
    local d=$BATS_TEST_TMPDIR off
    off=$(mid_slot_offset 3600000)
    run -76 "$RL" --once-per 1h --slot-offset "$off" job -c \
        "$(job "$d" 0 "redis-cli -p $REDIS_PORT DEL job >/dev/null")"
    run -0 "$RL" --once-per 1h --slot-offset "$off" job -c "$(job "$d" 0)"
    [ "$(starts_in "$d/log")" -eq 2 ]
}

@test "a waiter that gets the lock after the slot's run finished skips it" {
    local d=$BATS_TEST_TMPDIR off
    off=$(mid_slot_offset 3600000)
    "$RL" --once-per 1h --slot-offset "$off" job -c "$(job "$d" 0 "touch $d/holding; while [ ! -e $d/go ]; do sleep 0.02; done")" &
    RL_PID=$!
    wait_for 10 file_exists "$d/holding"
    "$RL" --once-per 1h --slot-offset "$off" -w 20s job -c "$(job "$d")" 2>"$d/waiter.err" &
    local waiter=$!
    wait_for 10 key_exists '{job}:wait'
    touch "$d/go"
    wait "$RL_PID"
    RL_PID=
    local status=0
    wait "$waiter" || status=$?
    [ "$status" = 75 ] || { echo "waiter exited $status: $(cat "$d/waiter.err")" >&2; false; }
    grep -q "already done" "$d/waiter.err"
    [ "$(starts_in "$d/log")" -eq 1 ]
}

@test "waiters queued behind the slot's run each skip in turn, none left waiting out a TTL" {
    # A skipping head leaves the queue and wakes the next: without that, the second waiter would
    # block until the holder's TTL (60s here) ran out, past the bound below.
    local d=$BATS_TEST_TMPDIR off i
    off=$(mid_slot_offset 3600000)
    "$RL" --ttl 60s --once-per 1h --slot-offset "$off" job -c "$(job "$d" 0 "touch $d/holding; while [ ! -e $d/go ]; do sleep 0.02; done")" &
    RL_PID=$!
    wait_for 10 file_exists "$d/holding"
    local waiters=()
    for i in 1 2 3; do
        "$RL" --ttl 60s --once-per 1h --slot-offset "$off" -w 120s job -c "$(job "$d")" 2>"$d/waiter$i.err" &
        waiters+=($!)
        wait_for 10 eval '[ "$(cli "$REDIS_PORT" LLEN "{job}:wait")" -eq '"$i"' ]'
    done
    touch "$d/go"
    wait "$RL_PID"
    RL_PID=
    for i in 0 1 2; do wait_for 20 pid_gone "${waiters[$i]}"; done
    for i in 1 2 3; do grep -q "already done" "$d/waiter$i.err"; done
    [ "$(starts_in "$d/log")" -eq 1 ]
    [ "$(cli "$REDIS_PORT" EXISTS '{job}:wait')" = 0 ]
}

@test "-E 0 -q keeps a skipped run silent, as cron wants" {
    local d=$BATS_TEST_TMPDIR off
    off=$(mid_slot_offset 3600000)
    run -0 "$RL" --once-per 1h --slot-offset "$off" job -c "$(job "$d")"
    run -0 --separate-stderr "$RL" --once-per 1h --slot-offset "$off" -E 0 -q job -c "$(job "$d")"
    [ -z "$output" ] && [ -z "$stderr" ]
    [ "$(starts_in "$d/log")" -eq 1 ]
}

@test "the slot record lives beside the lock and expires by itself a few periods later" {
    local d=$BATS_TEST_TMPDIR
    run -0 "$RL" --once-per 10s job -c "$(job "$d")"
    local ttl
    ttl=$(cli "$REDIS_PORT" PTTL '{job}:once')
    [ "$ttl" -gt 20000 ] && [ "$ttl" -le 30000 ]
}

@test "a slot record ahead of the current slot (a clock stepped back) skips the run" {
    local d=$BATS_TEST_TMPDIR off slot
    off=$(mid_slot_offset 3600000)
    # The slot of the same period five slots ahead, as a node whose clock ran ahead left it.
    slot=$(((($(redis_ms) - ${off%ms}) / 3600000) + 5))
    cli "$REDIS_PORT" HSET '{job}:once' slot "$slot" end_ms "$(redis_ms)" outcome ran >/dev/null
    run -75 "$RL" --once-per 1h --slot-offset "$off" job -c "$(job "$d")"
    [ ! -e "$d/log" ]
}

@test "a record of a shorter period earlier in the slot skips; one of a longer period does not" {
    local d=$BATS_TEST_TMPDIR now
    now=$(redis_ms)
    # An hourly run of this hour, now run daily: the day's slot has had its run.
    cli "$REDIS_PORT" HSET '{job}:once' slot $((now / 3600000)) start_ms $((now / 3600000 * 3600000)) \
        end_ms "$now" outcome ran >/dev/null
    run -75 "$RL" --once-per 1d job -c "$(job "$d")"
    [ ! -e "$d/log" ]
    # A daily run of a day begun before this minute, now run every minute: this minute's slot
    # has not had its run, although the daily slot's number is far below the minute's.
    cli "$REDIS_PORT" DEL '{job}:once' >/dev/null
    cli "$REDIS_PORT" HSET '{job}:once' slot $((now / 86400000)) start_ms $((now / 86400000 * 86400000)) \
        end_ms "$now" outcome ran >/dev/null
    if [ $((now % 86400000)) -ge 60000 ]; then
        run -0 "$RL" --once-per 1m job -c "$(job "$d")"
        [ "$(starts_in "$d/log")" -eq 1 ]
    fi
}

@test "a name moved from --once-per 1h to 1d and back: each run skips or runs once, never 'could not mark'" {
    local d=$BATS_TEST_TMPDIR hour day
    # Redis's clock now in the middle of both slots: the hour's began 30 minutes ago, the day's
    # 12 hours ago, whatever the time of day the test runs at.
    hour=$(mid_slot_offset 3600000)
    day=$(mid_slot_offset 86400000)
    run -0 --separate-stderr "$RL" --once-per 1h --slot-offset "$hour" job -c "$(job "$d")"
    assert_equal "$stderr" ''
    # The hourly run within today's slot used the day up: skipped, and nothing to mark.
    run -75 --separate-stderr "$RL" --once-per 1d --slot-offset "$day" job -c "$(job "$d")"
    refute_output --partial 'could not mark'
    [[ "$stderr" != *'could not mark'* ]]
    [ "$(starts_in "$d/log")" -eq 1 ]
    # Daily first: an hourly slot that began after it has not had its run, runs once, and marks
    # its slot (so the next hourly run and the daily one skip).
    cli "$REDIS_PORT" DEL '{job}:once' >/dev/null
    run -0 --separate-stderr "$RL" --once-per 1d --slot-offset "$day" job -c "$(job "$d")"
    assert_equal "$stderr" ''
    run -0 --separate-stderr "$RL" --once-per 1h --slot-offset "$hour" job -c "$(job "$d")"
    assert_equal "$stderr" ''
    [ "$(starts_in "$d/log")" -eq 3 ]
    run -75 --separate-stderr "$RL" --once-per 1h --slot-offset "$hour" job -c "$(job "$d")"
    [[ "$stderr" != *'could not mark'* ]]
    run -75 --separate-stderr "$RL" --once-per 1d --slot-offset "$day" job -c "$(job "$d")"
    [[ "$stderr" != *'could not mark'* ]]
    [ "$(starts_in "$d/log")" -eq 3 ]
}

@test "--once-per and --slot-offset are range-checked" {
    run -64 "$RL" --once-per 0 j true
    run -64 "$RL" --once-per 500ms j true
    run -64 "$RL" --once-per 400d j true
    assert_output --partial "out of range"
    run -64 "$RL" --once-per 1h --slot-offset 1h j true
    run -64 "$RL" --slot-offset 5m j true
    run -64 "$RL" --once-per-any-result j true
    REDLOCK_ONCE_PER=nonsense run -64 "$RL" j true
    run -64 --separate-stderr "$RL" --once-per 1h --permits 2 j true
    [[ "$stderr" == "redlock-run: --once-per needs --permits 1"* ]]
    [ "$(cli "$REDIS_PORT" EXISTS j)" = 0 ]
}

@test "quorum: the slot is written to a majority and a later run skips even with a node down" {
    load quorum_helpers
    quorum_start 3
    local d=$BATS_TEST_TMPDIR
    export REDLOCK_URL=$QUORUM_URL REDLOCK_NODE_TIMEOUT=200ms
    run -0 "$RL" --once-per 1h job -c "$(job "$d")"
    # A majority has the record for sure (the run returns once a majority answered; the third
    # node's copy may land later or not at all). Take down a node that has it.
    local i with=()
    for i in 0 1 2; do [ "$(cli "${Q_PORT[$i]}" EXISTS '{job}:once')" = 1 ] && with+=("$i"); done
    [ "${#with[@]}" -ge 2 ]
    q_down "${with[0]}"
    run -75 "$RL" --once-per 1h job -c "$(job "$d")"
    assert_output --partial "already done"
    [ "$(starts_in "$d/log")" -eq 1 ]
}

@test "cluster: the slot record is on the lock's master and later runs skip" {
    load cluster_helpers
    cluster_start
    local d=$BATS_TEST_TMPDIR
    export REDLOCK_URL=$CLUSTER_URL
    local name
    for name in alpha beta gamma; do
        run -0 "$RL" --once-per 1h "$name" -c "$(job "$d")"
        run -75 "$RL" --once-per 1h "$name" -c "$(job "$d")"
        ckey_exists "{$name}:once"
    done
    [ "$(starts_in "$d/log")" -eq 3 ]
}

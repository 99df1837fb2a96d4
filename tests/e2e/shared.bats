#!/usr/bin/env bats
# --shared: any number of shared holders of a name together, an exclusive holder (a run without
# --shared, or any plain SET NX PX client) alone, and writer preference in the waiters' queue.
# One redis-server for the whole file (every test uses its own lock names and starts from FLUSHALL).
load helpers
load holders_helpers

PROBE="$BATS_TEST_DIRNAME/permit_probe.py"

setup_file() { redis_start; }
teardown_file() { redis_stop; }

setup() { cli "$REDIS_PORT" FLUSHALL >/dev/null; PIDS=(); }
teardown() {
    touch "$BATS_TEST_TMPDIR/go" "$BATS_TEST_TMPDIR/stop" "$BATS_TEST_TMPDIR/go1" \
        "$BATS_TEST_TMPDIR/go2"
    local p
    for p in ${PAUSED:-}; do kill -CONT "$p" 2>/dev/null || true; done
    for p in ${PIDS[@]+"${PIDS[@]}"}; do
        kill -9 "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
}

# gated NAME [OPTIONS...]: a holder of NAME until $BATS_TEST_TMPDIR/go exists; appends its
# redlock-run pid and its fence to $BATS_TEST_TMPDIR/holders once it runs.
gated() {
    local name=$1
    shift
    "$RL" "$@" "$name" -- bash -c \
        'echo "$PPID $REDLOCK_FENCE" >> "$0/holders"; g=$0/go; '"$AWAIT" \
        "$BATS_TEST_TMPDIR" &
    PIDS+=($!)
}

@test "10 shared and 4 exclusive contenders x 3 rounds: never shared beside exclusive, never two exclusive, fences in admission order" {
    local i
    for i in $(seq 10); do crowd 3 0.1 S mix --shared --wait 60s --ttl 5s; done
    for i in $(seq 4); do crowd 3 0.1 X mix --wait 60s --ttl 5s; done
    crowd_wait
    run "$PROBE" check-shared "$BATS_TEST_TMPDIR/log" 42
    echo "$output"
    assert_success
    key_absent mix
    [ "$(cli "$REDIS_PORT" EXISTS '{mix}:shared')" = 0 ]
}

@test "shared waiters ahead of a waiting exclusive run are admitted together; shared runs after it wait for it" {
    local dir=$BATS_TEST_TMPDIR/barrier order=$BATS_TEST_TMPDIR/order
    mkdir "$dir"
    gated queue
    wait_for 5 key_exists queue
    local s
    for s in S1 S2; do
        # Each goes on only once both have started (they hold the lock at the same time), then
        # holds it until $BATS_TEST_TMPDIR/go2 exists.
        "$RL" --shared --wait 30s queue -- sh -c \
            'echo "$0" >> "$1"; touch "$2/$0"; n=0; while [ "$(ls "$2" | wc -l)" -lt 2 ]; do
                 n=$((n + 1)); [ "$n" -lt 500 ] || exit 9; sleep 0.02; done
             while [ ! -e "$3/go2" ]; do sleep 0.02; done' "$s" "$order" "$dir" "$BATS_TEST_TMPDIR" &
        PIDS+=($!)
    done
    wait_for 5 blocked_is 2
    "$RL" --wait 30s queue -- sh -c 'echo X1 >> "$0"; sleep 0.2; echo X1-end >> "$0"' "$order" &
    PIDS+=($!)
    wait_for 5 blocked_is 3
    touch "$BATS_TEST_TMPDIR/go"
    wait_for 10 lines_are "$order" 2
    # S1 and S2 hold it shared and X1 waits: a new shared run is not let in beside them.
    blocked_is 1
    run "$RL" --shared queue -- true
    assert_failure 75
    assert_output --partial "an exclusive run waits for it"
    "$RL" --shared --wait 30s queue -- sh -c 'echo S3 >> "$0"' "$order" &
    PIDS+=($!)
    wait_for 5 blocked_is 2
    touch "$BATS_TEST_TMPDIR/go2"
    local p
    for p in "${PIDS[@]}"; do wait "$p"; done
    PIDS=()
    cat "$order"
    [ "$(head -n 2 "$order" | sort | tr '\n' ' ')" = "S1 S2 " ]
    [ "$(tail -n 3 "$order" | tr '\n' ' ')" = "X1 X1-end S3 " ]
}

@test "a steady stream of shared runs does not starve a waiting exclusive run" {
    writer_through_readers stream 30s 10
}

@test "a SIGKILLed shared holder's hold returns when its TTL ends, without help" {
    # 2s: the holder must outlive the busy run below, and a 1s lease leaves a loaded machine
    # little room for a late renewal.
    gated dead --shared --ttl 2s
    wait_for 5 lines_are "$BATS_TEST_TMPDIR/holders" 1
    run "$RL" dead -- true
    assert_failure 75
    # redlock-run dies without releasing; its watchdog ends the command.
    kill -9 "${PIDS[0]}"
    run "$RL" --wait 10s dead -- sh -c 'echo "exclusive $REDLOCK_FENCE"'
    assert_success
    local fence
    fence=$(awk '{ print $2 }' "$BATS_TEST_TMPDIR/holders")
    # The exclusive holder's fence is above the shared holder's before it.
    [ "${output#exclusive }" -gt "$fence" ]
    key_absent dead
}

@test "a plain holder (SET NX PX, as redis-py) keeps --shared runs out, and shared holders keep plain and exclusive runs out" {
    cli "$REDIS_PORT" SET plain "$(printf '%032d' 7)" PX 30000 >/dev/null
    run "$RL" --shared plain -- true
    assert_failure 75
    assert_output --partial "lock 'plain' is held by an exclusive holder"
    [ "$(cli "$REDIS_PORT" GET plain)" = "$(printf '%032d' 7)" ]

    gated sh --shared
    gated sh --shared
    wait_for 5 lines_are "$BATS_TEST_TMPDIR/holders" 2
    [ "$(cli "$REDIS_PORT" GET sh)" = redlock-shared ]
    # What redis-py's Lock and the plain pattern do: SET NX fails.
    [ -z "$(cli "$REDIS_PORT" SET sh mine NX PX 1000)" ]
    run "$RL" sh -- true
    assert_failure 75
    run "$RL" --permits 2 sh -- true
    assert_failure 64
    assert_output --partial "held with --shared"
    [ "$(cli "$REDIS_PORT" GET sh)" = redlock-shared ]
    # A plain run's key is still its own token, as before --shared existed.
    run "$RL" fmt -- sh -c 'redis-cli -p "$0" GET fmt' "$REDIS_PORT"
    assert_success
    [[ "$output" =~ ^[0-9a-f]{32}$ ]]
}

@test "status, list, release --token and release --force on shared holders" {
    gated ops --shared --hold-info
    gated ops --shared --hold-info
    wait_for 5 lines_are "$BATS_TEST_TMPDIR/holders" 2
    run "$RL" status ops
    assert_success
    assert_output --partial "2 shared holders"
    assert_output --partial "shared 2"
    assert_output --partial "go"  # the recorded command line
    run "$RL" status --json ops
    assert_success
    [ "$(jq -r '.shared' <<<"$output")" = true ]
    [ "$(jq -r '.holders | length' <<<"$output")" = 2 ]
    [ "$(jq -r '[.holders[].fence] | sort | join(" ")' <<<"$output")" = \
      "$(awk '{ print $2 }' "$BATS_TEST_TMPDIR/holders" | sort | tr '\n' ' ' | sed 's/ $//')" ]
    [ "$(jq -r '.holders[0].holder.pid' <<<"$output")" -gt 0 ]
    local token
    token=$(jq -r '.holders[0].token' <<<"$output")
    run "$RL" list
    assert_success
    assert_output --partial "2 shared holders"
    refute_output --partial "shared:"
    run "$RL" release --token "$token" ops
    assert_success
    assert_output --partial "released the shared hold of token"
    run "$RL" status --json ops
    [ "$(jq -r '.holders | length' <<<"$output")" = 1 ]
    run "$RL" release --token "$(printf '%032d' 1)" ops
    assert_failure 1
    run "$RL" release --force ops
    assert_success
    assert_output --partial "released lock 'ops' shared holder: "
    run "$RL" status ops
    assert_failure 1
    key_absent ops
}

@test "a nested run of the same name inside a shared holder runs within its hold, shared or not" {
    run "$RL" --keep-env --shared nest -- "$RL" --keep-env --shared nest -- "$RL" nest -- sh -c 'echo "inner $REDLOCK_FENCE"'
    assert_success
    assert_output --regexp '^inner [0-9]+$'
}

@test "--shared from REDLOCK_SHARED, with --min-hold and --max-runtime; refused with --permits (64)" {
    REDLOCK_SHARED=1 gated env
    wait_for 5 lines_are "$BATS_TEST_TMPDIR/holders" 1
    REDLOCK_SHARED=1 run "$RL" env -- true
    assert_success
    run "$RL" env -- true
    assert_failure 75

    run "$RL" --shared --min-hold 3s keep -- true
    assert_success
    run "$RL" keep -- true
    assert_failure 75
    run "$RL" --shared keep -- true
    assert_success

    run "$RL" --shared --max-runtime 0.3s long -- sleep 10
    assert_failure 124
    key_absent long

    run "$RL" --shared --permits 2 mixed -- true
    assert_failure 64
    assert_output --partial "--shared does not combine with --permits"
}

@test "the run ledger records a shared run (and a permit's) as ran, and the hold is released" {
    run "$RL" --shared led:s -- true
    assert_success
    run "$RL" --permits 2 led:p -- true
    assert_success
    # The ledger's own script judges a plain lock by its key; a shared or permit hold lives in
    # keys of its own and must not be recorded as lost.
    run "$RL" history --json led:s
    assert_output --partial '"outcome":"ran"'
    refute_output --partial '"lost"'
    run "$RL" history --json led:p
    assert_output --partial '"outcome":"ran"'
    [ "$(cli "$REDIS_PORT" EXISTS led:s)" = 0 ]
    [ "$(cli "$REDIS_PORT" ZCARD '{led:s}:shared')" = 0 ]
}

# ---- The hand-off in one round trip (issue 35): a release that frees the lock hands it on ----

@test "hand-offs among 8 shared and 3 exclusive contenders x 4 rounds: never shared beside exclusive, never two exclusive, fences in admission order" {
    local i
    for i in $(seq 8); do
        CROWD_ERR=$BATS_TEST_TMPDIR/S.err crowd 4 0.1 S handed --shared -v --wait 60s --ttl 5s
    done
    for i in $(seq 3); do
        CROWD_ERR=$BATS_TEST_TMPDIR/X.err crowd 4 0.1 X handed -v --wait 60s --ttl 5s
    done
    crowd_wait
    run "$PROBE" check-shared "$BATS_TEST_TMPDIR/log" 44
    echo "$output"
    assert_success
    # Readers were handed the shared hold by the writers' releases (and writers the lock, by the
    # last reader's release or a writer's, as for a plain lock), not only woken to acquire.
    local readers writers
    readers=$(grep -c "was handed over by its release" "$BATS_TEST_TMPDIR/S.err" || true)
    writers=$(grep -c "was handed over by its release" "$BATS_TEST_TMPDIR/X.err" || true)
    echo "# hand-offs: $readers to shared runs, $writers to exclusive runs" >&3
    [ "$readers" -gt 0 ]
    key_absent handed
    [ "$(cli "$REDIS_PORT" EXISTS '{handed}:shared')" = 0 ]
}

@test "a shared head waiter killed while queued holds its share for the claim window, not the TTL" {
    # An exclusive holder with a TTL of a minute: before the hand-off, the dead shared head kept
    # the free lock reserved for that TTL and a grace after it.
    GATE=$BATS_TEST_TMPDIR/go1 probe_run first X -t 60s dead-head
    wait_for 10 has_started first
    probe_run head S --shared -t 60s dead-head
    local head=$REPLY
    wait_for 10 blocked_is 1
    # An exclusive waiter behind it: the dead reader's share keeps it out.
    probe_run next X -t 60s dead-head
    local next=$REPLY
    wait_for 10 blocked_is 2
    kill -9 "$head"
    wait "$head" || true
    touch "$BATS_TEST_TMPDIR/go1"
    local released took
    released=$(now_ms)
    wait "$next"
    took=$(($(now_ms) - released))
    echo "# the next waiter ran ${took}ms after the release" >&3
    assert_equal "$(start_order first head next)" "first next "
    # The claim window is 5s (the TTL's minimum); 30s leaves a loaded machine room, and is half
    # what the minute's TTL cost before.
    [ "$took" -lt 30000 ]
    run "$PROBE" check-shared "$BATS_TEST_TMPDIR/log"
    echo "$output"
    assert_success
}

@test "a shared head waiter paused past its turn and resumed never holds beside the exclusive run that took over" {
    GATE=$BATS_TEST_TMPDIR/go1 probe_run first X -t 1s paused
    wait_for 10 has_started first
    probe_run head S --shared -v -t 2s paused
    local head=$REPLY
    wait_for 10 blocked_is 1
    # An exclusive waiter holding until go2: the head, resumed, finds it running.
    GATE=$BATS_TEST_TMPDIR/go2 probe_run next X -t 2s paused
    local next=$REPLY
    wait_for 10 blocked_is 2
    kill -STOP "$head"
    PAUSED=$head
    touch "$BATS_TEST_TMPDIR/go1"
    # Whatever the release handed the head, the exclusive waiter gets the lock once that lapsed.
    wait_for 60 has_started next
    assert_equal "$(start_order first head next)" "first next "
    kill -CONT "$head"
    PAUSED=
    # Resumed while the exclusive run holds: the head must not start now. It is queued again
    # once it has looked, which shows it has resumed and looked.
    wait_for 30 blocked_is 1
    assert_equal "$(start_order first head next)" "first next "
    touch "$BATS_TEST_TMPDIR/go2"
    wait "$next"
    wait "$head"
    wait_for 10 all_ended "$BATS_TEST_TMPDIR/log"
    assert_equal "$(start_order first head next)" "first next head "
    # It was handed its share while paused, and confirmed rather than started on it.
    grep "handed over too long after" "$BATS_TEST_TMPDIR/head.err"
    run "$PROBE" check-shared "$BATS_TEST_TMPDIR/log"
    echo "$output"
    assert_success
}

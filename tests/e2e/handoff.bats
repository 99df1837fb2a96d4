#!/usr/bin/env bats
# The hand-off from a holder to the queue's head, under its safety properties (issue 35): many
# `--wait` runs on one lock never hold it two at a time, their fences strictly grow, waiters
# queued one after another run in that order, and a head waiter that was paused (SIGSTOP) past
# its turn never runs beside the holder that took the lock meanwhile. The commands' own
# start/end log (lease_probe.py) is the witness, checked by contenders.bash's checker; with
# --permits and --shared too, under waiters SIGSTOPped at random (permits.bats and shared.bats
# hold their other hand-off tests).
load helpers
load contenders

setup() { redis_start; }
teardown() {
    touch "$BATS_TEST_TMPDIR/go" "$BATS_TEST_TMPDIR/go2"
    local pid
    for pid in ${PAUSED:-}; do kill -CONT "$pid" 2>/dev/null || true; done
    if [ -n "${HOLDER:-}" ]; then
        kill -9 "$HOLDER" 2>/dev/null || true
        wait "$HOLDER" 2>/dev/null || true
    fi
    contenders_cleanup
    rl_cleanup "$BATS_TEST_TMPDIR"/contenders/pgid.* "$BATS_TEST_TMPDIR"/pgid.*
    redis_stop
}

# probe_run TAG [OPTIONS...] NAME: a background `redlock-run --wait 60s OPTIONS NAME` whose command
# is lease_probe.py, logging to $CONT_DIR/log as the contenders do (work: until the file $GATE
# exists when GATE is set, else 0.05s); its pid in $REPLY.
probe_run() {
    local tag=$1 work=0.05
    shift
    [ -z "${GATE:-}" ] || work="until:$GATE"
    "$RL" --wait 60s "$@" -- /usr/bin/python3 "$PROBE" hold "$CONT_DIR/log" "$tag" \
        "$BATS_TEST_TMPDIR/pgid.$tag" "$work" >/dev/null 2>"$BATS_TEST_TMPDIR/$tag.err" &
    REPLY=$!
}

# start_order LOG: the tags in the order their commands started.
start_order() { awk '$1 == "start" { printf "%s ", $2 }' "$1"; }

@test "contenders with --wait on one plain lock: never two holders, fences strictly growing" {
    CONTENDER_WORK=0.05 contenders_start 6 loop -v --wait 60s -t 5s
    contenders_progress 60 40
    contenders_stop
    contenders_check
    # The lock went from run to run by hand-offs (issue 35), not only by wake-ups and acquires.
    local handed
    handed=$(cat "$CONT_DIR"/*.err | grep -c "was handed over by its release" || true)
    echo "# $handed hand-offs" >&3
    [ "$handed" -gt 0 ]
}

@test "a head waiter killed while queued holds the lock for the claim window, not the TTL" {
    CONT_DIR="$BATS_TEST_TMPDIR/contenders"
    mkdir -p "$CONT_DIR"
    # A TTL of a minute: before the hand-off, the dead head kept the lock reserved for the
    # holder's TTL and a grace after it (wait.bats "a waiter killed outright ...").
    hold_until dead-head "$BATS_TEST_TMPDIR/go" -t 60s
    probe_run head dead-head -t 60s
    local head=$REPLY
    wait_for 10 blocked_is 1
    probe_run next dead-head -t 60s
    local next=$REPLY
    wait_for 10 blocked_is 2
    kill -9 "$head"
    wait "$head" || true
    touch "$BATS_TEST_TMPDIR/go"
    wait "$HOLDER"
    HOLDER=
    local released took
    released=$(now_ms)
    wait "$next"
    took=$(($(now_ms) - released))
    echo "# the next waiter ran ${took}ms after the release" >&3
    assert_equal "$(start_order "$CONT_DIR/log")" "next "
    # The claim window is 5s (the TTL's minimum); 30s leaves a loaded machine room, and is half
    # what the minute's TTL cost before.
    [ "$took" -lt 30000 ]
    key_absent dead-head
}

@test "waiters queued one after another take the lock in that order, each fence above the last" {
    CONT_DIR="$BATS_TEST_TMPDIR/contenders"
    mkdir -p "$CONT_DIR"
    hold_until fifo "$BATS_TEST_TMPDIR/go"
    local i pids=() want=""
    for i in 1 2 3 4 5 6 7 8; do
        probe_run "w$i" fifo
        pids+=("$REPLY")
        want+="w$i "
        wait_for 10 blocked_is "$i"
    done
    touch "$BATS_TEST_TMPDIR/go"
    for i in "${pids[@]}"; do wait "$i"; done
    wait_for 10 all_ended "$CONT_DIR/log"
    assert_equal "$(start_order "$CONT_DIR/log")" "$want"
    run /usr/bin/python3 "$PROBE" check "$CONT_DIR/log"
    echo "$output"
    assert_success
    key_absent fifo
}

@test "a head waiter paused past its turn and resumed never runs beside the holder that took over" {
    CONT_DIR="$BATS_TEST_TMPDIR/contenders"
    mkdir -p "$CONT_DIR"
    # A short holder TTL: the paused head's reservation (its last block, bounded by that TTL, plus
    # the presence grace) ends soon, and the second waiter takes the lock while the head sleeps.
    hold_until paused "$BATS_TEST_TMPDIR/go" -t 1s
    probe_run head paused -v -t 2s
    local head=$REPLY
    wait_for 10 blocked_is 1
    # The second waiter holds until go2: the head, resumed, finds it running.
    GATE="$BATS_TEST_TMPDIR/go2" probe_run next paused -t 2s
    local next=$REPLY
    wait_for 10 blocked_is 2
    kill -STOP "$head"
    PAUSED=$head
    touch "$BATS_TEST_TMPDIR/go"
    wait "$HOLDER"
    HOLDER=
    # Whatever the release handed the head, the next waiter gets the lock once that has lapsed.
    wait_for 60 starts_reach_in "$CONT_DIR/log" 1
    assert_equal "$(start_order "$CONT_DIR/log")" "next "
    kill -CONT "$head"
    PAUSED=
    # Resumed while the next holder runs: the head must not start now. It is queued again (or
    # blocked) once it has looked, which shows it has resumed and looked.
    wait_for 30 blocked_is 1
    assert_equal "$(start_order "$CONT_DIR/log")" "next "
    touch "$BATS_TEST_TMPDIR/go2"
    wait "$next"
    wait "$head"
    wait_for 10 all_ended "$CONT_DIR/log"
    assert_equal "$(start_order "$CONT_DIR/log")" "next head "
    # It was handed the lock while paused, and confirmed rather than started on it.
    grep "handed over too long after" "$BATS_TEST_TMPDIR/head.err"
    run /usr/bin/python3 "$PROBE" check "$CONT_DIR/log"
    echo "$output"
    assert_success
    key_absent paused
}
starts_reach_in() { [ "$(starts_in "$1")" -ge "$2" ]; }

# The pid of the redlock-run queued last on lock NAME (chaos by default) now (its ':who' record:
# since, pid, host), blocked in its BLPOP as far as the queue can tell.
waiting_rl() {
    local name=${1:-chaos} token who
    token=$(cli "$REDIS_PORT" LINDEX "{$name}:wait" -1)
    [ -n "$token" ] || return 1
    who=$(cli "$REDIS_PORT" GET "{$name}:wake:$token:who")
    set -- $who
    [ -n "${2:-}" ] && echo "$2"
}
some_waiting_rl() { waiting_rl "$@" >/dev/null; }

# pause_waiters NAME: six times, SIGSTOPs the run queued last on lock NAME until four more
# commands (of the others) have started, then resumes it; STOPPED is how many it paused.
pause_waiters() {
    local k pid
    STOPPED=0
    for k in 1 2 3 4 5 6; do
        wait_for 10 some_waiting_rl "$1" || continue
        pid=$(waiting_rl "$1") || continue
        kill -STOP "$pid" 2>/dev/null || continue
        PAUSED="$PAUSED $pid"
        STOPPED=$((STOPPED + 1))
        # With four others, it reached the queue's head meanwhile, and was handed the lock (a
        # permit, a shared hold) or passed over.
        contenders_progress 60 4
        kill -CONT "$pid" 2>/dev/null || true
    done
    PAUSED=
}

# Every run ended 0, or 69 when paused between taking the lock and starting its command for
# longer than its lease allowed ("acquired too late": released, the command never started).
exits_are_clean() {
    local tag status bad=0
    while read -r _ tag status _; do
        [ "$status" = 0 ] && continue
        if [ "$status" = 69 ] && grep -q "acquired too late" "$CONT_DIR/$tag.err"; then continue; fi
        echo "exit $tag $status"
        cat "$CONT_DIR/$tag.err"
        bad=1
    done < <(grep '^exit ' "$CONT_DIR/log")
    [ "$bad" = 0 ]
}

@test "contenders whose waiters are SIGSTOPped past the claim window at random never overlap" {
    # A 3s TTL: the claim window is 3s, and a waiter paused for longer than that finds the lock
    # gone on. A paused waiter usually has a plain wake-up ('1': look again) in its socket when
    # it is handed the lock, so the hand-off waits in its list while someone else takes the
    # lapsed lock: its next acquire, busy, must drop it. Without that (acquire.lua's DEL of the
    # wake-up list on a busy reply) this loop saw three overlaps and fences out of order.
    CONTENDER_WORK=0.1 contenders_start 5 chaos -v --wait 60s -t 3s
    contenders_progress 60 3
    pause_waiters chaos
    contenders_progress 60 3
    contenders_stop
    local confirmed
    confirmed=$(cat "$CONT_DIR"/*.err | grep -c "handed over too long after" || true)
    echo "# $STOPPED waiters paused; $confirmed hand-offs confirmed rather than started on" >&3
    [ "$STOPPED" -ge 4 ]
    run /usr/bin/python3 "$PROBE" check "$CONT_DIR/log"
    echo "$output"
    echo "# $(tail -n 1 <<<"$output")" >&3
    assert_success
    exits_are_clean
}

@test "--permits 2 contenders whose waiters are SIGSTOPped at random: never more than 2 at once, never a permit twice" {
    CONTENDER_WORK=0.1 contenders_start 6 pchaos --permits 2 -v --wait 60s -t 3s
    contenders_progress 60 3
    pause_waiters pchaos
    contenders_progress 60 3
    contenders_stop
    local handed confirmed
    handed=$(cat "$CONT_DIR"/*.err | grep -c "was handed over by its release" || true)
    confirmed=$(cat "$CONT_DIR"/*.err | grep -c "handed over too long after" || true)
    echo "# $STOPPED waiters paused; $handed hand-offs, $confirmed confirmed rather than started on" >&3
    [ "$STOPPED" -ge 4 ]
    [ "$handed" -gt 0 ]
    run /usr/bin/python3 "$PROBE" check "$CONT_DIR/log" --at-once 2
    echo "$output"
    echo "# $(tail -n 1 <<<"$output")" >&3
    assert_success
    exits_are_clean
}

@test "--shared and exclusive contenders whose waiters are SIGSTOPped at random: never an exclusive run beside another" {
    CONTENDER_WORK=0.1 contenders_start 4 schaos --shared -v --wait 60s -t 3s
    local readers=$CONTENDERS
    CONTENDER_WORK=0.1 contenders_start 2 schaos -v --wait 60s -t 3s
    CONTENDERS="$readers $CONTENDERS"
    contenders_progress 60 3
    pause_waiters schaos
    contenders_progress 60 3
    contenders_stop
    local handed confirmed
    handed=$(cat "$CONT_DIR"/*.err | grep -c "was handed over by its release" || true)
    confirmed=$(cat "$CONT_DIR"/*.err | grep -c "handed over too long after" || true)
    echo "# $STOPPED waiters paused; $handed hand-offs, $confirmed confirmed rather than started on" >&3
    [ "$STOPPED" -ge 4 ]
    [ "$handed" -gt 0 ]
    # The second round of contenders (tags r2.*) are the exclusive ones.
    run /usr/bin/python3 "$PROBE" check "$CONT_DIR/log" --at-once 0 --exclusive r2.
    echo "$output"
    echo "# $(tail -n 1 <<<"$output")" >&3
    assert_success
    exits_are_clean
}

#!/usr/bin/env bats
# Issue 33: a run that died with its watchdog (so that nothing recorded its end) shows as abandoned
# in history and status once its lease ran out, and the next holder records it, for a permit
# holder, a shared holder and a holder over a quorum.
load helpers
load quorum_helpers
bats_require_minimum_version 1.5.0

setup() { redis_start; }
teardown() {
    touch "$BATS_TEST_TMPDIR/go"
    rl_cleanup "$BATS_TEST_TMPDIR"/pgid*
    redis_stop
    [ -z "${Q_PID+set}" ] || quorum_stop
}

# died_with_watchdog NAME [OPTIONS...]: a redlock-run holding NAME with a 2s lease, killed with
# its watchdog (the watchdog first: one that outlived redlock-run would hand over), then its
# command; sets DEAD to its pid.
died_with_watchdog() {
    local name=$1 d=$BATS_TEST_TMPDIR watchdog
    shift
    rl_start -t 2s "$@" "$name" -- sh -c "echo \$\$ > '$d/pgid.$name'; sleep 100; true"
    wait_for 5 file_exists "$d/pgid.$name"
    wait_for 5 watchdog_of "$RL_PID"
    watchdog=$(watchdog_of "$RL_PID")
    DEAD=$RL_PID
    kill -KILL "$watchdog"
    wait_for 5 pid_gone "$watchdog"
    kill -KILL "$RL_PID"
    rl_finish 5
    # Nothing is left to stop the command.
    kill -KILL -- "-$(cat "$d/pgid.$name")"
}

# shows_abandoned NAME PID: history --json of NAME has an abandoned run of PID (for wait_for: the
# lease has to run out first).
shows_abandoned() {
    # (jq -s: jq -e on no input at all succeeds.)
    "$RL" history --json "$1" | jq -s -e --argjson pid "$2" \
        'any(.outcome == "abandoned" and .pid == $pid and .fence > 0 and .end_ms >= .start_ms)' \
        >/dev/null
}

# assert_abandoned NAME [OPTIONS...]: history, history --json and status show the run of $DEAD as
# abandoned once (status shows last runs only while no permit or shared holder is in: not with
# HELD_BY_OTHERS=1); the next run given OPTIONS records it (once) before its own.
assert_abandoned() {
    local name=$1
    shift
    wait_for 15 shows_abandoned "$name" "$DEAD"
    run -0 "$RL" history "$name"
    assert_line --regexp "abandoned .* $DEAD "
    run -0 jq -s -r 'map(select(.outcome == "abandoned")) | length' < <("$RL" history --json "$name")
    assert_output 1
    if [ -z "${HELD_BY_OTHERS:-}" ]; then
        run "$RL" status "$name"
        assert_output --regexp "last run: .*abandoned.*pid $DEAD"
        run -0 jq -r '.last_run | "\(.outcome) \(.pid)"' < <("$RL" status --json "$name")
        assert_output "abandoned $DEAD"
    fi
    run -0 "$RL" "$@" "$name" -- true
    run -0 jq -r '"\(.outcome) \(.pid)"' < <("$RL" history --json --limit 2 "$name")
    assert_equal "${#lines[@]}" 2
    assert_line --index 0 --regexp "^ran [0-9]+$"
    assert_line --index 1 "abandoned $DEAD"
    run -0 "$RL" "$@" "$name" -- true
    run -0 jq -s -r 'map(select(.outcome == "abandoned")) | length' < <("$RL" history --json "$name")
    assert_output 1
}

# The plain lock: the run's holder record outlives its 2s lease (lib/abandoned.lua).
@test "a redlock-run killed with its watchdog shows as abandoned once its lease ran out, and the next run records it" {
    died_with_watchdog gone
    assert_abandoned gone
}

@test "permits: a lone permit holder killed with its watchdog shows as abandoned, and the next run records it" {
    died_with_watchdog palone --permits 2
    assert_abandoned palone --permits 2
}

# With another holder on permit 1 throughout, so that the lock stays held: the dead run's permit 2
# runs out alone, its record is found through the set of open runs, and the run that takes
# permit 2 next records it.
@test "permits: a permit holder killed with its watchdog shows as abandoned, and the next holder of its permit records it" {
    local d=$BATS_TEST_TMPDIR other
    "$RL" --permits 2 -t 60s pgone -- sh -c "touch '$d/other'; while [ ! -e '$d/go' ]; do sleep 0.1; done" &
    other=$!
    wait_for 5 file_exists "$d/other"
    died_with_watchdog pgone --permits 2
    HELD_BY_OTHERS=1 assert_abandoned pgone --permits 2
    # The other holder held its permit throughout, and its run is recorded as it ended.
    touch "$d/go"
    wait "$other"
    run -0 jq -r '.outcome' < <("$RL" history --json --limit 1 pgone)
    assert_output ran
}

@test "shared: a shared holder killed with its watchdog shows as abandoned, and the next shared run records it" {
    died_with_watchdog sgone --shared
    assert_abandoned sgone --shared
}

# With another shared holder in throughout: the dead run shows as abandoned while the lock is held
# shared (its hold ended, the other's did not), and is recorded once a run takes the lock free.
@test "shared: a shared holder killed with its watchdog shows as abandoned beside a live one, and is recorded once the lock is taken free" {
    local d=$BATS_TEST_TMPDIR other
    "$RL" --shared -t 60s sother -- sh -c "touch '$d/other'; while [ ! -e '$d/go' ]; do sleep 0.1; done" &
    other=$!
    wait_for 5 file_exists "$d/other"
    died_with_watchdog sother --shared
    wait_for 15 shows_abandoned sother "$DEAD"
    # A shared run beside the other holder does not take the lock free: it records nothing.
    run -0 "$RL" --shared sother -- true
    run -0 jq -r '"\(.outcome) \(.pid)"' < <("$RL" history --json --limit 2 sother)
    assert_line --index 0 "abandoned $DEAD"
    assert_line --index 1 --regexp "^ran [0-9]+$"
    touch "$d/go"
    wait "$other"
    run -0 "$RL" --shared sother -- true
    run -0 jq -r '.outcome' < <("$RL" history --json sother)
    assert_equal "$(echo "${lines[*]}")" "ran abandoned ran ran"
    run -0 "$RL" --shared sother -- true
    run -0 jq -s -r 'map(select(.outcome == "abandoned")) | length' < <("$RL" history --json sother)
    assert_output 1
}

@test "quorum: a holder killed with its watchdog shows as abandoned over the quorum, and the next holder records it" {
    quorum_start 3
    export REDLOCK_URL=$QUORUM_URL
    died_with_watchdog qgone
    assert_abandoned qgone
}

@test "quorum: a permit holder killed with its watchdog shows as abandoned over the quorum, and the next run records it" {
    quorum_start 3
    export REDLOCK_URL=$QUORUM_URL
    died_with_watchdog qpgone --permits 2
    assert_abandoned qpgone --permits 2
}

@test "quorum: a shared holder killed with its watchdog shows as abandoned over the quorum, and the next shared run records it" {
    quorum_start 3
    export REDLOCK_URL=$QUORUM_URL
    died_with_watchdog qsgone --shared
    assert_abandoned qsgone --shared
}

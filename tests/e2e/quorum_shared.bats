#!/usr/bin/env bats
# --shared over a quorum (several -u): a shared holder is among the shared holders on a majority,
# an exclusive holder holds the plain lock on a majority; every node keeps the two apart and any
# two majorities share a node, so they never hold at once. Waiters of both kinds queue by ticket
# on every node, with writer preference. The commands' own start/end log (permit_probe.py) is the
# proof. The three servers are shared by the whole file (each test uses its own lock names).
load helpers
load quorum_helpers
load holders_helpers
bats_require_minimum_version 1.5.0

PROBE="$BATS_TEST_DIRNAME/permit_probe.py"

setup_file() { quorum_file_start 3; }
teardown_file() { quorum_file_stop; }

setup() {
    quorum_file_restore
    export REDLOCK_URL=$QUORUM_URL
    # As quorum.bats: a node timeout that a sanitizer build on a busy machine still meets.
    export REDLOCK_NODE_TIMEOUT=400ms
    PIDS=()
}
teardown() {
    local i
    touch "$BATS_TEST_TMPDIR/go" "$BATS_TEST_TMPDIR/go2" "$BATS_TEST_TMPDIR/stop"
    for i in ${PIDS[@]+"${PIDS[@]}"}; do kill -9 "$i" 2>/dev/null || true; done
    for i in ${PIDS[@]+"${PIDS[@]}"}; do wait "$i" 2>/dev/null || true; done
}

# gated NAME [OPTIONS...]: a holder of NAME until $BATS_TEST_TMPDIR/go exists; appends its
# redlock-run pid and fence to $BATS_TEST_TMPDIR/holders once it runs. (--wait although the lock
# may be free: an attempt whose nodes answer after the node timeout is tried again.)
gated() {
    local name=$1
    shift
    "$RL" --wait 20s "$@" "$name" -- bash -c \
        'echo "$PPID $REDLOCK_FENCE" >> "$0/holders"; g=$0/go; '"$AWAIT" \
        "$BATS_TEST_TMPDIR" &
    PIDS+=($!)
}

@test "8 shared and 3 exclusive contenders x 3 rounds over three nodes: never shared beside exclusive, never two exclusive, fences in admission order" {
    local i
    for i in $(seq 8); do crowd 3 0.1 S qmix --shared --wait 90s --ttl 5s; done
    for i in $(seq 3); do crowd 3 0.1 X qmix --wait 90s --ttl 5s; done
    crowd_wait
    run "$PROBE" check-shared "$BATS_TEST_TMPDIR/log" 33
    echo "$output"
    assert_success
    # Released on every node (a node a loaded machine let time out is left to the 5s TTL).
    wait_for 15 q_nothing_left qmix '{qmix}:shared'
}

@test "shared quorum runs hold together; an exclusive run is busy beside them, and they beside it" {
    gated qtogether --shared
    gated qtogether --shared
    wait_for 25 lines_are "$BATS_TEST_TMPDIR/holders" 2
    wait_for 25 shared_on_majority qtogether 2
    run "$RL" qtogether -- true
    assert_failure 75
    touch "$BATS_TEST_TMPDIR/go"
    for p in "${PIDS[@]}"; do wait "$p"; done
    PIDS=()
    rm "$BATS_TEST_TMPDIR/go"
    gated qtogether
    wait_for 25 held_on_majority qtogether
    run "$RL" --shared qtogether -- true
    assert_failure 75
    assert_output --partial "held by an exclusive holder, or an exclusive run waits for it"
}

@test "over the quorum, shared waiters ahead of a waiting exclusive run are admitted together; shared runs after it wait for it" {
    local dir=$BATS_TEST_TMPDIR/barrier order=$BATS_TEST_TMPDIR/order s
    mkdir "$dir"
    gated qqueue
    wait_for 25 held_on_majority qqueue
    for s in S1 S2; do
        "$RL" --shared --wait 60s qqueue -- sh -c \
            'echo "$0" >> "$1"; touch "$2/$0"; n=0; while [ "$(ls "$2" | wc -l)" -lt 2 ]; do
                 n=$((n + 1)); [ "$n" -lt 1000 ] || exit 9; sleep 0.02; done
             while [ ! -e "$3/go2" ]; do sleep 0.02; done' "$s" "$order" "$dir" "$BATS_TEST_TMPDIR" &
        PIDS+=($!)
    done
    wait_for 25 queued_on_majority qqueue 2
    "$RL" --wait 60s qqueue -- sh -c 'echo X1 >> "$0"; sleep 0.2; echo X1-end >> "$0"' "$order" &
    PIDS+=($!)
    wait_for 25 queued_on_majority qqueue 3
    touch "$BATS_TEST_TMPDIR/go"
    wait_for 25 lines_are "$order" 2
    # S1 and S2 hold it shared and X1 waits on every node: a new shared run is kept out.
    queued_on_majority qqueue 1
    run "$RL" --shared qqueue -- true
    assert_failure 75
    "$RL" --shared --wait 60s qqueue -- sh -c 'echo S3 >> "$0"' "$order" &
    PIDS+=($!)
    wait_for 25 queued_on_majority qqueue 2
    touch "$BATS_TEST_TMPDIR/go2"
    local p
    for p in "${PIDS[@]}"; do wait "$p"; done
    PIDS=()
    cat "$order"
    [ "$(head -n 2 "$order" | sort | tr '\n' ' ')" = "S1 S2 " ]
    [ "$(tail -n 3 "$order" | tr '\n' ' ')" = "X1 X1-end S3 " ]
}

@test "over the quorum, a steady stream of shared runs does not starve a waiting exclusive run" {
    writer_through_readers qstream 60s 25
}

@test "a SIGKILLed shared quorum holder's hold returns when its TTL ends, without help" {
    gated qdead --shared --ttl 4s
    wait_for 25 lines_are "$BATS_TEST_TMPDIR/holders" 1
    kill -9 "${PIDS[0]}"
    run "$RL" --wait 20s qdead -- echo exclusive
    assert_success
    assert_output exclusive
}

@test "status, list, release --token and --force on shared quorum holders; a nested run" {
    gated qinspect --shared --hold-info
    gated qinspect --shared --hold-info
    wait_for 25 lines_are "$BATS_TEST_TMPDIR/holders" 2
    run "$RL" status qinspect
    assert_success
    assert_line --regexp '^state: +held$'
    assert_line --regexp '^holders: +2 shared holders$'
    run "$RL" list
    assert_success
    assert_line --regexp '^qinspect +[23] of 3 .*2 shared holders'
    local token
    token=$(cli "${Q_PORT[0]}" ZRANGE '{qinspect}:shared' 0 0)
    [ -n "$token" ] || token=$(cli "${Q_PORT[1]}" ZRANGE '{qinspect}:shared' 0 0)
    run "$RL" release --token "$token" qinspect
    assert_success
    assert_output --regexp "released on [23] of 3 nodes"
    run "$RL" release --force qinspect
    assert_success
    assert_line --regexp "^node 127\.0\.0\.1:[0-9]+: released 1 shared holder$"
    assert_output --regexp "released on [23] of 3 nodes"
    local p
    for p in "${PIDS[@]}"; do wait_for 25 pid_gone "$p"; done
    PIDS=()

    run "$RL" -v --shared --wait 20s qinspect -- env REDLOCK_URL="$QUORUM_URL" "$RL" -v \
        qinspect -- echo nested
    assert_success
    assert_output --partial "is held by a parent redlock-run (token verified)"
    assert_line nested
}

@test "on the quorum, --min-hold keeps a shared hold (an exclusive run is busy) and --max-runtime ends one" {
    run "$RL" --shared --wait 20s --min-hold 10s qsmh -- true
    assert_success
    run "$RL" status --json qsmh
    assert_success
    echo "$output" | jq -e '.shared == true and (.holders | length) == 1'
    run "$RL" qsmh -- true
    assert_failure 75
    run "$RL" --shared --wait 20s --max-runtime 300ms --kill-after 200ms qsmr -- sleep 5
    assert_failure 124
    q_nothing_left qsmr
}

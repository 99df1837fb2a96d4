#!/usr/bin/env bats
# The hand-off over a quorum of three nodes for --permits N and --shared (issue 35): each node's
# release hands the freed permit (or the shared hold) to the waiter it admits there, and the
# waiter starts when a majority handed it the same permit, after the fence step such holders
# always take (QuorumTarget::take_hand_off). Contenders that wait on one name never hold more
# than N at once (never a writer beside anyone), fences never repeat and follow the order the
# runs were admitted in; the commands' own start/end log (permit_probe.py) is the witness, and
# the runs' -v lines show that they started on hand-offs.
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
    # As quorum_handoff.bats: room for a loaded machine.
    export REDLOCK_NODE_TIMEOUT=400ms
    PIDS=()
}
teardown() {
    local i
    touch "$BATS_TEST_TMPDIR/go1" "$BATS_TEST_TMPDIR/go2" "$BATS_TEST_TMPDIR/stop"
    for i in "${!Q_PID[@]}"; do q_thaw "$i" 2>/dev/null || true; done
    for i in ${PIDS[@]+"${PIDS[@]}"}; do kill -9 "$i" 2>/dev/null || true; done
    for i in ${PIDS[@]+"${PIDS[@]}"}; do wait "$i" 2>/dev/null || true; done
}

# The runs that started on a hand-off (-v says so) in FILE...
handed_in() { cat "$@" 2>/dev/null | grep -c "was handed over by its release" || true; }

# gated_on GATE NAME [OPTIONS...]: a holder of NAME until the file GATE exists; appends its
# permit (or '-') to $BATS_TEST_TMPDIR/permits once it runs.
gated_on() {
    local gate=$1 name=$2
    shift 2
    "$RL" --wait 20s "$@" "$name" -- bash -c \
        'echo "${REDLOCK_PERMIT:--}" >> "$0/permits"; g=$1; '"$AWAIT" \
        "$BATS_TEST_TMPDIR" "$gate" &
    PIDS+=($!)
}
q_permit_held() { [ "$(cli "${Q_PORT[$1]}" EXISTS "{$2}:permit:$3")" = 1 ]; }

@test "quorum --permits 2 contenders: never more than 2 at once, never a permit twice, fences unique, started on hand-offs" {
    local i
    export CROWD_ERR=$BATS_TEST_TMPDIR/crowd.err
    for i in $(seq 6); do crowd 20 0.05 - qphand --permits 2 -v --wait 90s --ttl 5s; done
    crowd_wait
    run "$PROBE" check "$BATS_TEST_TMPDIR/log" 2 120
    echo "$output"
    assert_success
    local handed
    handed=$(handed_in "$CROWD_ERR")
    echo "# $handed of 120 runs started on a hand-off; $(tail -n 1 <<<"$output")" >&3
    [ "$handed" -gt 0 ]
    wait_for 15 q_nothing_left qphand
}

@test "quorum --shared and exclusive contenders: never a writer beside anyone, fences unique and in admission order, started on hand-offs" {
    local i
    # (Each crowd's runs write to the CROWD_ERR of when it started: the readers' apart.)
    export CROWD_ERR=$BATS_TEST_TMPDIR/readers.err
    for i in $(seq 6); do crowd 15 0.05 S qshand --shared -v --wait 90s --ttl 5s; done
    CROWD_ERR=$BATS_TEST_TMPDIR/writers.err
    for i in $(seq 2); do crowd 15 0.05 X qshand -v --wait 90s --ttl 5s; done
    crowd_wait
    run "$PROBE" check-shared "$BATS_TEST_TMPDIR/log" 120
    echo "$output"
    assert_success
    local readers writers
    readers=$(handed_in "$BATS_TEST_TMPDIR/readers.err")
    writers=$(handed_in "$BATS_TEST_TMPDIR/writers.err")
    echo "# $readers of 90 readers and $writers of 30 writers started on a hand-off; $(tail -n 1 <<<"$output")" >&3
    [ "$readers" -gt 0 ]
    wait_for 15 q_nothing_left qshand '{qshand}:shared'
}

# frozen_while_running LOG: once 20 runs have started, freezes node 2 (SIGSTOP) until 30 more
# have: the two live nodes are a majority, and the crowds go on.
frozen_while_running() {
    wait_for 60 starts_at_least "$1" 20
    q_freeze 2
    wait_for 60 starts_at_least "$1" 50
    q_thaw 2
}

@test "quorum --permits 2 contenders while one node is frozen: never more than 2 at once, never a permit twice, fences unique" {
    local i
    export CROWD_ERR=$BATS_TEST_TMPDIR/crowd.err
    for i in $(seq 6); do crowd 15 0.05 - qpfrozen --permits 2 -v --wait 90s --ttl 5s; done
    frozen_while_running "$BATS_TEST_TMPDIR/log"
    crowd_wait
    run "$PROBE" check "$BATS_TEST_TMPDIR/log" 2 90
    echo "$output"
    assert_success
    echo "# $(handed_in "$CROWD_ERR") of 90 runs started on a hand-off; $(tail -n 1 <<<"$output")" >&3
}

@test "quorum --shared and exclusive contenders while one node is frozen: never a writer beside anyone, fences in admission order" {
    local i
    export CROWD_ERR=$BATS_TEST_TMPDIR/crowd.err
    for i in $(seq 5); do crowd 15 0.05 S qsfrozen --shared -v --wait 90s --ttl 5s; done
    for i in $(seq 2); do crowd 15 0.05 X qsfrozen -v --wait 90s --ttl 5s; done
    frozen_while_running "$BATS_TEST_TMPDIR/log"
    crowd_wait
    run "$PROBE" check-shared "$BATS_TEST_TMPDIR/log" 105
    echo "$output"
    assert_success
    echo "# $(handed_in "$CROWD_ERR") of 105 runs started on a hand-off; $(tail -n 1 <<<"$output")" >&3
}

@test "a quorum --permits waiter is handed the permit its holder freed and starts on it" {
    gated_on "$BATS_TEST_TMPDIR/go1" qpone --permits 2
    wait_for 25 lines_are "$BATS_TEST_TMPDIR/permits" 1
    gated_on "$BATS_TEST_TMPDIR/go2" qpone --permits 2
    wait_for 25 lines_are "$BATS_TEST_TMPDIR/permits" 2
    local first
    first=$(head -n 1 "$BATS_TEST_TMPDIR/permits")
    wait_for 25 on_majority q_permit_held qpone "$first"
    "$RL" -v --permits 2 --wait 60s qpone -- sh -c 'echo "$REDLOCK_PERMIT" > "$0"' \
        "$BATS_TEST_TMPDIR/waiter" 2>"$BATS_TEST_TMPDIR/waiter.err" &
    local waiter=$!
    PIDS+=("$waiter")
    wait_for 25 queued_on_majority qpone 1
    # Only the first holder ends: its permit is the one free, handed to the waiter.
    touch "$BATS_TEST_TMPDIR/go1"
    wait "$waiter"
    cat "$BATS_TEST_TMPDIR/waiter.err"
    [ "$(cat "$BATS_TEST_TMPDIR/waiter")" = "$first" ]
    grep -q "was handed over by its release" "$BATS_TEST_TMPDIR/waiter.err"
}

@test "quorum --shared waiters behind a writer are handed a shared hold together and start on it" {
    gated_on "$BATS_TEST_TMPDIR/go1" qsone
    wait_for 25 held_on_majority qsone
    local i dir=$BATS_TEST_TMPDIR/barrier
    mkdir "$dir"
    for i in 1 2; do
        # Each waits for the other inside the lock: they hold it together.
        "$RL" -v --shared --wait 60s qsone -- sh -c \
            'touch "$0/$1"; n=0; while [ "$(ls "$0" | wc -l)" -lt 2 ]; do
                 n=$((n + 1)); [ "$n" -lt 1000 ] || exit 9; sleep 0.02; done' "$dir" "$i" \
            2>"$BATS_TEST_TMPDIR/r$i.err" &
        PIDS+=($!)
        wait_for 25 queued_on_majority qsone "$i"
    done
    touch "$BATS_TEST_TMPDIR/go1"
    local p
    for p in "${PIDS[@]:1}"; do wait "$p"; done
    cat "$BATS_TEST_TMPDIR"/r*.err
    [ "$(handed_in "$BATS_TEST_TMPDIR"/r*.err)" = 2 ]
}

@test "a quorum writer behind shared holders is handed the lock by the last one's release and starts on it" {
    gated_on "$BATS_TEST_TMPDIR/go1" qwone --shared
    wait_for 25 shared_on_majority qwone 1
    "$RL" -v --wait 60s qwone -- true 2>"$BATS_TEST_TMPDIR/writer.err" &
    local writer=$!
    PIDS+=("$writer")
    wait_for 25 queued_on_majority qwone 1
    touch "$BATS_TEST_TMPDIR/go1"
    wait "$writer"
    cat "$BATS_TEST_TMPDIR/writer.err"
    grep -q "was handed over by its release" "$BATS_TEST_TMPDIR/writer.err"
}

#!/usr/bin/env bats
# --permits N over a quorum (several -u): a holder holds one permit, the same one on a majority
# of nodes, so at most N hold the name at once; waiters queue by ticket on every node and a freed
# permit admits one of them. The commands' own start/end log (permit_probe.py) is the proof. The
# three servers are shared by the whole file (each test uses its own lock names).
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
    touch "$BATS_TEST_TMPDIR/go" "$BATS_TEST_TMPDIR/stop"
    for i in "${!Q_PID[@]}"; do q_thaw "$i" 2>/dev/null || true; done
    for i in ${PIDS[@]+"${PIDS[@]}"}; do kill -9 "$i" 2>/dev/null || true; done
    for i in ${PIDS[@]+"${PIDS[@]}"}; do wait "$i" 2>/dev/null || true; done
}

permit_gone() { [ "$(cli "${Q_PORT[$1]}" EXISTS "$2")" = 0 ]; }
# gated NAME N [OPTIONS...]: a --permits N holder of NAME until $BATS_TEST_TMPDIR/go exists;
# appends "PID PERMIT" to $BATS_TEST_TMPDIR/owners and its permit to .../permits once it runs.
gated() {
    local name=$1 n=$2
    shift 2
    # --wait although permits are free: an attempt whose nodes answer after the node timeout
    # (a loaded machine) is tried again instead of ending with 69.
    "$RL" --permits "$n" --wait 20s "$@" "$name" -- bash -c \
        'echo "$PPID $REDLOCK_PERMIT" >> "$0/owners"; echo "$REDLOCK_PERMIT" >> "$0/permits"; g=$0/go; '"$AWAIT" \
        "$BATS_TEST_TMPDIR" &
    PIDS+=($!)
}

@test "12 contenders x 3 rounds with --permits 3 over three nodes: never more than 3 at once, never a permit twice, fences unique" {
    local i
    for i in $(seq 12); do crowd 3 0.15 - qcrowd --permits 3 --wait 90s --ttl 5s; done
    crowd_wait
    run "$PROBE" check "$BATS_TEST_TMPDIR/log" 3 36
    echo "$output"
    assert_success
    # (That the permits are used together is the next test's, with a barrier: how many held at
    # once here depends on the machine's load, and "peak 3" failed under CI's.)
    # Released on every node (a node a loaded machine let time out is left to the 5s TTL).
    wait_for 15 q_nothing_left qcrowd
}

@test "N quorum runs with --permits N hold the lock together (each waits for all N)" {
    local i dir=$BATS_TEST_TMPDIR/barrier
    mkdir "$dir"
    for i in 1 2 3; do
        "$RL" --permits 3 --wait 20s qtogether -- sh -c \
            'touch "$0/$REDLOCK_PERMIT"; n=0; while [ "$(ls "$0" | wc -l)" -lt 3 ]; do
                 n=$((n + 1)); [ "$n" -lt 1000 ] || exit 9; sleep 0.02; done' "$dir" &
        PIDS+=($!)
    done
    for i in "${PIDS[@]}"; do wait "$i"; done
    PIDS=()
    [ "$(ls "$dir" | sort | tr '\n' ' ')" = "1 2 3 " ]
}

@test "all N permits taken on the quorum: the next run is busy (exit 75) and says so" {
    gated qbusy 2
    gated qbusy 2
    wait_for 25 lines_are "$BATS_TEST_TMPDIR/permits" 2
    [ "$(sort "$BATS_TEST_TMPDIR/permits" | tr '\n' ' ')" = "1 2 " ]
    run "$RL" --permits 2 qbusy -- true
    assert_failure 75
    assert_output --partial "all 2 permits of lock 'qbusy' are held"
}

@test "a freed permit on the quorum wakes one waiter, the longest waiting" {
    gated qwake 2
    gated qwake 2
    wait_for 25 lines_are "$BATS_TEST_TMPDIR/permits" 2
    local i
    for i in 1 2 3; do
        "$RL" --permits 2 --wait 60s qwake -- sh -c \
            'echo "$0" >> "$1"; while [ ! -e "$2" ]; do sleep 0.02; done' \
            "$i" "$BATS_TEST_TMPDIR/order" "$BATS_TEST_TMPDIR/stop" &
        PIDS+=($!)
        # Each queued on every node before the next arrives: its ticket is the earlier one.
        wait_for 25 queued_on_majority qwake "$i"
    done
    # Ends the first holder only: one permit is free, one waiter runs, the first to arrive.
    kill -TERM "${PIDS[0]}"
    wait_for 25 lines_are "$BATS_TEST_TMPDIR/order" 1
    [ "$(cat "$BATS_TEST_TMPDIR/order")" = 1 ]
    # The other two stay queued on every node: the one free permit went to the first alone.
    queued_on_majority qwake 2
    [ "$(wc -l <"$BATS_TEST_TMPDIR/order")" = 1 ]
    # The second holder ends: the second waiter runs, the third still waits.
    touch "$BATS_TEST_TMPDIR/go"
    wait_for 25 lines_are "$BATS_TEST_TMPDIR/order" 2
    [ "$(tr '\n' ' ' <"$BATS_TEST_TMPDIR/order")" = "1 2 " ]
    queued_on_majority qwake 1
    touch "$BATS_TEST_TMPDIR/stop"
    wait_for 25 lines_are "$BATS_TEST_TMPDIR/order" 3
    [ "$(tr '\n' ' ' <"$BATS_TEST_TMPDIR/order")" = "1 2 3 " ]
}

@test "a SIGKILLed quorum holder's permit returns when its TTL ends, without help" {
    gated qdead 2 --ttl 4s
    gated qdead 2 --ttl 4s
    wait_for 25 lines_are "$BATS_TEST_TMPDIR/permits" 2
    local victim=${PIDS[0]} victim_permit
    victim_permit=$(awk -v p="$victim" '$1 == p { print $2 }' "$BATS_TEST_TMPDIR/owners")
    [ -n "$victim_permit" ]
    kill -9 "$victim"
    run "$RL" --permits 2 --wait 20s qdead -- sh -c 'echo "$REDLOCK_PERMIT"'
    assert_success
    # The dead holder's permit while the other holder keeps its own: only the TTL freed it.
    assert_output "$victim_permit"
    kill -0 "${PIDS[1]}"
}

@test "a quorum run with a different --permits gets a clear error (exit 64)" {
    gated qmixed 3
    wait_for 25 lines_are "$BATS_TEST_TMPDIR/permits" 1
    run "$RL" --permits 2 qmixed -- true
    assert_failure 64
    assert_output --partial "held with --permits 3, not 2"
    run "$RL" qmixed -- true
    assert_failure 64
    assert_output --partial "--permits 3"
}

@test "a node that gives another permit is outvoted and cleaned up; status, list and release see the majority" {
    # Node 2 alone has permit 1 taken by a foreign token: it gives this run permit 2, the other
    # two give permit 1. The run holds permit 1 (a majority) and gives node 2's permit 2 back.
    cli "${Q_PORT[2]}" SET qsplit redlock-permits/2 PX 60000 >/dev/null
    cli "${Q_PORT[2]}" SET '{qsplit}:permit:1' foreign PX 60000 >/dev/null
    gated qsplit 2 --hold-info
    wait_for 25 lines_are "$BATS_TEST_TMPDIR/permits" 1
    [ "$(cat "$BATS_TEST_TMPDIR/permits")" = 1 ]
    local token
    token=$(cli "${Q_PORT[0]}" GET '{qsplit}:permit:1')
    [ "$(cli "${Q_PORT[1]}" GET '{qsplit}:permit:1')" = "$token" ]
    # Given back on node 2 by the settle step, which the run did not wait for.
    wait_for 25 permit_gone 2 '{qsplit}:permit:2'
    [ "$(cli "${Q_PORT[2]}" GET '{qsplit}:permit:1')" = foreign ]

    run "$RL" status qsplit
    assert_success
    assert_line --regexp '^state: +held$'
    assert_line --regexp '^permits: +1 of 2 held$'
    assert_output --partial "token ${token:0:8}"
    # The foreign token holds a permit on one node only: no holder.
    refute_output --partial "foreign"
    run "$RL" status --json qsplit
    assert_success
    assert_output --partial '"held_permits":1'

    run "$RL" list
    assert_success
    assert_line --regexp '^qsplit +3 of 3 .*1 of 2 held'

    # --token ends that holder on every node that has it.
    run "$RL" release --token "$token" qsplit
    assert_success
    assert_output --partial "released on 2 of 3 nodes"
    wait_for 25 pid_gone "${PIDS[0]}"
    wait "${PIDS[0]}" || [ $? = 76 ]
    PIDS=()
}

@test "release --force on the quorum ends every permit holder and says which" {
    gated qforce 2 --hold-info
    gated qforce 2 --hold-info
    wait_for 25 lines_are "$BATS_TEST_TMPDIR/permits" 2
    run "$RL" release --force qforce
    assert_success
    assert_line --regexp "^node 127\.0\.0\.1:[0-9]+: released 2 permit holders \(permits 1, 2\)$"
    assert_line --regexp "^released lock 'qforce' permit 1: root@"
    assert_line --regexp "^released lock 'qforce' permit 2: root@"
    assert_output --regexp "released on [23] of 3 nodes"
    local p
    for p in "${PIDS[@]}"; do
        wait_for 25 pid_gone "$p"
    done
    for p in 0 1 2; do [ "$(cli "${Q_PORT[$p]}" EXISTS qforce)" = 0 ]; done
}

@test "a nested run of the same name inside a quorum permit holder runs within its permit" {
    # The command does not inherit REDLOCK_URL (quorum.bats says why): the inner run names the
    # same nodes itself.
    run "$RL" -v --permits 2 --wait 20s qnest -- env REDLOCK_URL="$QUORUM_URL" "$RL" -v \
        --permits 2 qnest -- sh -c 'echo "nested $REDLOCK_PERMIT"'
    assert_success
    assert_output --partial "is held by a parent redlock-run (token verified)"
    assert_line --regexp '^nested [12]$'
}

@test "with one of five nodes frozen, permits are still granted and released" {
    quorum_start 5
    export REDLOCK_URL=$QUORUM_URL
    q_freeze 4
    run "$RL" --permits 2 --wait 20s qfrozen -- sh -c 'echo "permit $REDLOCK_PERMIT"'
    q_thaw 4
    quorum_stop
    assert_success
    assert_output "permit 1"
}

@test "on the quorum, --min-hold keeps the permit, --max-runtime frees it, and status --json lists it" {
    run "$RL" --permits 2 --wait 20s --min-hold 10s --hold-info qmh -- true
    assert_success
    # Kept on a majority after the run: status counts the holder there.
    run "$RL" status --json qmh
    assert_success
    echo "$output" | jq -e '.permits == 2 and .held_permits == 1 and .holders[0].permit == 1'
    run "$RL" --permits 2 --wait 20s --max-runtime 300ms --kill-after 200ms qmr -- sleep 5
    assert_failure 124
    q_nothing_left qmr
}

@test "permits freed at once on the quorum reach their waiters without waiting for a TTL" {
    # Three holders end together while ten runs wait. A release reaches the nodes at different
    # moments, so for a moment their free permits differ and a woken waiter can be given
    # different permits by different nodes: it must try again at once. It used to block until
    # a holder's TTL (60s here) or its own --wait ran out, and then take a permit that had been
    # free all along; a bench of 10 rounds saw it in 2 runs of 3.
    # A lock of its own each round: what one round leaves on a node that a release or a dequeue
    # did not reach in time (the quorum's documented best effort, cleared by the 60s TTL) must
    # not decide the next round. ciW's release pass saw a round's first three runs find two of
    # the three permits held or promised on two nodes for their whole 20s --wait.
    local round i name
    for round in $(seq 8); do
        name=qburst$round
        rm -f "$BATS_TEST_TMPDIR/go" "$BATS_TEST_TMPDIR/permits" "$BATS_TEST_TMPDIR/failed"
        PIDS=()
        for i in 1 2 3; do gated "$name" 3 --ttl 60s; done
        wait_for 25 lines_are "$BATS_TEST_TMPDIR/permits" 3
        local holders=("${PIDS[@]}")
        PIDS=()
        for i in $(seq 10); do
            { "$RL" --permits 3 --ttl 60s --wait 120s "$name" -- true ||
                echo "waiter $i: $?" >>"$BATS_TEST_TMPDIR/failed"; } &
            PIDS+=($!)
        done
        wait_for 25 queued_on_majority "$name" 10
        touch "$BATS_TEST_TMPDIR/go"
        # Hand-offs take milliseconds; a waiter stuck until a TTL takes a minute.
        for i in "${holders[@]}" "${PIDS[@]}"; do wait_for 20 pid_gone "$i"; done
        for i in "${holders[@]}" "${PIDS[@]}"; do wait "$i"; done
        PIDS=()
        [ ! -e "$BATS_TEST_TMPDIR/failed" ] || { cat "$BATS_TEST_TMPDIR/failed"; false; }
    done
}

@test "permits held on overlapping majorities leave a permit free everywhere, and a waiter takes it" {
    # Holder A has permit 1 on nodes 0 and 1, holder B permit 2 on nodes 1 and 2 (each gave
    # back what the third node gave it). Permit 3 is free on every node, but each node's
    # "first free permit" differs (2, 3, 1), so a run that takes the first free one splits on
    # every attempt, for as long as A and B hold: ciX's release pass saw a run wait out its
    # whole 20s --wait so. After a split the next attempt asks for the permit that the most
    # nodes said was free.
    local name=qoverlap i
    for i in 0 1 2; do cli "${Q_PORT[$i]}" SET "$name" redlock-permits/3 PX 60000 >/dev/null; done
    for i in 0 1; do cli "${Q_PORT[$i]}" SET "{$name}:permit:1" holder-a PX 60000 >/dev/null; done
    for i in 1 2; do cli "${Q_PORT[$i]}" SET "{$name}:permit:2" holder-b PX 60000 >/dev/null; done
    run -0 "$RL" --permits 3 --wait 15s "$name" -- sh -c 'echo "permit $REDLOCK_PERMIT"'
    [ "$output" = "permit 3" ]
    # And a run that does not wait is not told that all permits are taken.
    run -0 "$RL" --permits 3 "$name" -- sh -c 'echo "permit $REDLOCK_PERMIT"'
    [ "$output" = "permit 3" ]
}

#!/usr/bin/env bats
# --wait over a quorum of three nodes: every node queues the waiters in the order they began
# waiting, a release wakes the head, so the lock passes in arrival order with no overlap (the
# commands' own start/end log, lease_probe.py), also with one node frozen. The three servers are
# shared by the whole file (each test uses its own lock names and leaves every node running).
load helpers
load quorum_helpers
bats_require_minimum_version 1.5.0

PROBE="$BATS_TEST_DIRNAME/lease_probe.py"

setup_file() { quorum_file_start 3; }
teardown_file() { quorum_file_stop; }

setup() {
    quorum_file_restore
    export REDLOCK_URL=$QUORUM_URL
    # 400 ms, as in quorum.bats: with 100 ms, a single try (the newcomer of test 5) whose nodes all
    # answered late under a sanitizer on a busy machine ended with 69 instead of the busy 75.
    export REDLOCK_NODE_TIMEOUT=400ms
    PIDS=()
}
teardown() {
    local i
    for i in "${!Q_PID[@]}"; do q_thaw "$i" 2>/dev/null || true; done
    for i in "${PIDS[@]}" ${HOLDER:-}; do kill -9 "$i" 2>/dev/null || true; done
    for i in "${PIDS[@]}" ${HOLDER:-}; do wait "$i" 2>/dev/null || true; done
}

# hold_gate NAME GATE: a quorum holder of NAME until the file GATE exists; returns once it holds.
hold_gate() {
    # --wait although the lock is free: an acquire whose nodes all answer after the 100ms node
    # timeout (a sanitizer build on a busy machine) is tried again instead of ending with 69.
    "$RL" --wait 20s "$1" -- bash -c 'touch "$0.held"; g=$0; '"$AWAIT" "$2" &
    HOLDER=$!
    wait_for 25 file_exists "$2.held"
}

# queued_on NODES NAME COUNT: COUNT waiters of NAME are queued on each of the nodes NODES.
queued_on() {
    local i
    for i in $1; do
        [ "$(cli "${Q_PORT[$i]}" ZCARD "{$2}:wait")" = "$3" ] || return 1
    done
}

blocked_on() {
    local i
    for i in $1; do
        [ "$(blocked_clients "${Q_PORT[$i]}")" = "$2" ] || return 1
    done
}

# start_order LOG: the tags in the order their commands started.
start_order() { awk '$1 == "start" { printf "%s ", $2 }' "$1"; }
ends_logged() { [ "$(grep -c '^end ' "$1")" = "$2" ]; }

# fifo_round NAME LIVE_NODES: eight waiters, each started once the one before is queued on
# every live node, run one at a time in that order after the holder lets go.
fifo_round() {
    local name=$1 live=$2 d=$BATS_TEST_TMPDIR i
    hold_gate "$name" "$d/go"
    for i in 1 2 3 4 5 6 7 8; do
        "$RL" --wait 60s "$name" -- /usr/bin/python3 "$PROBE" hold "$d/log" "$i" "$d/pgid$i" 0.05 &
        PIDS+=($!)
        wait_for 10 queued_on "$live" "$name" "$i"
    done
    touch "$d/go"
    for i in "${PIDS[@]}"; do wait "$i"; done
    wait_for 5 ends_logged "$d/log" 8
    run -0 /usr/bin/python3 "$PROBE" check "$d/log"
    assert_equal "$(start_order "$d/log")" "1 2 3 4 5 6 7 8 "
    # Nobody is left queued or holding.
    wait_for 5 queued_on "$live" "$name" 0
    for i in $live; do assert_equal "$(cli "${Q_PORT[$i]}" EXISTS "$name")" 0; done
}

@test "quorum waiters take the lock one at a time in the order they began waiting" {
    fifo_round fifo "0 1 2"
}

@test "with one of three nodes frozen, waiters still run one at a time in arrival order" {
    q_freeze 2
    fifo_round frozen "0 1"
    q_thaw 2
}

@test "quorum: status shows the waiters in order from the first node that answered" {
    hold_gate qstatus "$BATS_TEST_TMPDIR/go"
    "$RL" --wait 30s qstatus -- true &
    PIDS+=($!)
    wait_for 25 queued_on "0 1 2" qstatus 1
    "$RL" --wait 30s qstatus -- true &
    PIDS+=($!)
    wait_for 25 queued_on "0 1 2" qstatus 2
    run -0 --separate-stderr "$RL" status --json qstatus
    echo "$output" | jq -e --argjson a "${PIDS[0]}" --argjson b "${PIDS[1]}" \
        --arg n "127.0.0.1:${Q_PORT[0]}" \
        '.waiters_from == $n and .waiting == 2 and .waiters[0].pid == $a
         and .waiters[1].pid == $b and all(.waiters[]; .mode == "exclusive")'
    run -0 --separate-stderr "$RL" status qstatus
    [[ "$output" == *$'\nwaiting:  2 (queue of node 127.0.0.1:'"${Q_PORT[0]}"$')\n  1. '*" pid ${PIDS[0]}, "*$'\n  2. '*" pid ${PIDS[1]}, "* ]]
    touch "$BATS_TEST_TMPDIR/go"
    wait "${PIDS[0]}"
    wait "${PIDS[1]}"
}

@test "a quorum waiter blocks on every node until the release wakes it, then runs" {
    local d=$BATS_TEST_TMPDIR
    hold_gate woken "$d/go"
    "$RL" -v --wait 60s woken -- touch "$d/ran" 2>"$d/err" &
    PIDS+=($!)
    # Blocked in BLPOP on every node (a wake-up list), not retrying.
    wait_for 10 blocked_on "0 1 2" 1
    [ ! -e "$d/ran" ]
    touch "$d/go"
    wait "${PIDS[0]}"
    [ -e "$d/ran" ]
    grep -q "is busy (0 of 3 nodes accepted, 3 answered); waiting" "$d/err"
    blocked_on "0 1 2" 0
}

@test "a waiter stopped by SIGTERM leaves every queue and the next waiter runs at the release" {
    local d=$BATS_TEST_TMPDIR
    hold_gate leaving "$d/go"
    "$RL" --wait 60s leaving -- touch "$d/first" &
    local first=$!
    wait_for 10 queued_on "0 1 2" leaving 1
    "$RL" --wait 60s leaving -- touch "$d/second" &
    PIDS+=($!)
    wait_for 10 queued_on "0 1 2" leaving 2
    kill -TERM "$first"
    local code=0
    wait "$first" || code=$?
    assert_equal "$code" 143
    wait_for 5 queued_on "0 1 2" leaving 1
    touch "$d/go"
    wait "${PIDS[0]}"
    [ -e "$d/second" ]
    [ ! -e "$d/first" ]
}

@test "a run without --wait does not slip past the queued waiters after a release" {
    local d=$BATS_TEST_TMPDIR
    hold_gate reserved "$d/go"
    # The waiter's command holds the lock until told, so the newcomer's try is decided by the
    # queue: either the waiter already holds it, or the free key is reserved for the waiter.
    "$RL" --wait 60s reserved -- sh -c 'touch "$0/waiter"; while [ ! -e "$0/go2" ]; do sleep 0.02; done' "$d" &
    PIDS+=($!)
    wait_for 10 queued_on "0 1 2" reserved 1
    touch "$d/go"
    run -75 "$RL" reserved -- touch "$d/newcomer"
    [ ! -e "$d/newcomer" ]
    wait_for 10 file_exists "$d/waiter"
    touch "$d/go2"
    wait "${PIDS[0]}"
}

@test "16 waiting contenders at once over three nodes: no overlap, every one runs, fences grow" {
    local d=$BATS_TEST_TMPDIR i
    for i in $(seq 16); do
        "$RL" -t 5s --wait 60s crowd -- sh -c 'echo "$REDLOCK_FENCE" >> "$0/fences"; exec /usr/bin/python3 "$1" hold "$0/log" "$2" "$0/pgid$2" 0.02' \
            "$d" "$PROBE" "$i" &
        PIDS+=($!)
    done
    for i in "${PIDS[@]}"; do wait "$i"; done
    wait_for 5 ends_logged "$d/log" 16
    run -0 /usr/bin/python3 "$PROBE" check "$d/log"
    assert_output --regexp "^16 commands, .* 0 problems$"
    assert_equal "$(wc -l <"$d/fences")" 16
    run -0 sort -n -c -u "$d/fences"
    wait_for 5 queued_on "0 1 2" crowd 0
}

@test "a lock an application holds on the quorum and DELs wakes a quorum waiter long before its TTL" {
    # An application's Redlock (node-redlock, redis-py's) releases with its own DEL, which wakes
    # no queue: the waiter must look again now and then instead of sleeping out the 60s TTL.
    local i
    for i in 0 1 2; do cli "${Q_PORT[i]}" SET qforeign app-token NX PX 60000 >/dev/null; done
    "$RL" --wait 90s qforeign -- touch "$BATS_TEST_TMPDIR/ran" &
    PIDS+=($!)
    wait_for 25 queued_on_majority qforeign 1
    for i in 0 1 2; do cli "${Q_PORT[i]}" DEL qforeign >/dev/null; done
    # The looks grow to one every 2s; a minute would mean the TTL was waited out.
    wait_for 20 file_exists "$BATS_TEST_TMPDIR/ran"
    wait "${PIDS[0]}"
}

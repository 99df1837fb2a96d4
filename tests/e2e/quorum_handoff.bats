#!/usr/bin/env bats
# The hand-off over a quorum of three nodes (issue 35): each node's release hands the lock to the
# head of its queue, and the waiter starts on a majority of hand-offs (QuorumTarget). Many
# `--wait` runs on one lock never hold it two at a time, their fences strictly grow, also while
# one node is frozen (SIGSTOP); waiters queued one after another run in that order; a head that
# was killed while queued holds the lock for the claim window, not the TTL. The commands' own
# start/end log (lease_probe.py) is the witness, checked by contenders.bash's checker.
load helpers
load quorum_helpers
load contenders
bats_require_minimum_version 1.5.0

setup() {
    quorum_start 3
    export REDLOCK_URL=$QUORUM_URL
    # As quorum_wait.bats: room for a loaded machine (a node that answers later than this is
    # counted as not answering, and the frozen node's connects and commands end at it).
    export REDLOCK_NODE_TIMEOUT=400ms
    PIDS=()
}
teardown() {
    local i
    touch "$BATS_TEST_TMPDIR/go"
    for i in "${!Q_PID[@]}"; do q_thaw "$i" 2>/dev/null || true; done
    for i in "${PIDS[@]}" ${HOLDER:-}; do kill -9 "$i" 2>/dev/null || true; done
    for i in "${PIDS[@]}" ${HOLDER:-}; do wait "$i" 2>/dev/null || true; done
    contenders_cleanup
    rl_cleanup "$BATS_TEST_TMPDIR"/contenders/pgid.* "$BATS_TEST_TMPDIR"/pgid.*
    quorum_stop
}

# The runs that started on a hand-off (-v says so), in every contender's stderr.
handed_count() { cat "$CONT_DIR"/*.err 2>/dev/null | grep -c "was handed over by its release" || true; }

# q_hold NAME GATE [OPTIONS...]: a quorum holder of NAME until the file GATE exists; returns once
# a majority holds it.
q_hold() {
    local name=$1 gate=$2
    shift 2
    "$RL" --wait 20s "$@" "$name" -- bash -c "g=\$0; $AWAIT" "$gate" &
    HOLDER=$!
    wait_for 25 held_on_majority "$name"
}

# probe_run TAG [OPTIONS...] NAME: a background `redlock-run -v --wait 60s OPTIONS NAME` whose
# command is lease_probe.py (0.05s of work), logging to $CONT_DIR/log; its pid in $REPLY.
probe_run() {
    local tag=$1
    shift
    "$RL" -v --wait 60s "$@" -- /usr/bin/python3 "$PROBE" hold "$CONT_DIR/log" "$tag" \
        "$BATS_TEST_TMPDIR/pgid.$tag" 0.05 >/dev/null 2>"$CONT_DIR/$tag.err" &
    REPLY=$!
    PIDS+=("$REPLY")
}

start_order() { awk '$1 == "start" { printf "%s ", $2 }' "$1"; }

@test "quorum contenders with --wait: never two holders, fences strictly growing, handed over" {
    CONTENDER_WORK=0.05 contenders_start 6 qloop -v --wait 60s -t 5s
    contenders_progress 60 40
    contenders_stop
    contenders_check
    # The lock went from run to run by hand-offs, not only by wake-ups and acquires.
    local handed
    handed=$(handed_count)
    echo "# $handed hand-offs" >&3
    [ "$handed" -gt 0 ]
}

@test "quorum contenders with --wait while one node is frozen: never two holders, fences growing" {
    CONTENDER_WORK=0.05 contenders_start 6 qfrozen -v --wait 60s -t 5s
    contenders_progress 60 10
    q_freeze 2
    local before
    before=$(handed_count)
    # The two live nodes are a majority: the loop goes on. (Few of these runs start on a
    # hand-off: a waiter's failed attempt waits for the frozen node's step back under the
    # give-back bounds, so the hand-off that comes meanwhile is too old to start on, and an
    # acquire confirms it.)
    contenders_progress 60 20
    local during
    during=$(($(handed_count) - before))
    q_thaw 2
    contenders_progress 60 10
    contenders_stop
    contenders_check
    echo "# $during hand-offs while node 2 was frozen, $(handed_count) in all" >&3
    [ "$(handed_count)" -gt 0 ]
}

@test "quorum waiters queued one after another are handed the lock in that order" {
    CONT_DIR="$BATS_TEST_TMPDIR/contenders"
    mkdir -p "$CONT_DIR"
    q_hold qfifo "$BATS_TEST_TMPDIR/go" -t 60s
    local i
    for i in 1 2 3 4 5 6; do
        probe_run "w$i" qfifo
        wait_for 10 queued_on_majority qfifo "$i"
    done
    touch "$BATS_TEST_TMPDIR/go"
    for i in "${PIDS[@]}"; do wait "$i"; done
    PIDS=()
    wait_for 10 all_ended "$CONT_DIR/log"
    assert_equal "$(start_order "$CONT_DIR/log")" "w1 w2 w3 w4 w5 w6 "
    run -0 /usr/bin/python3 "$PROBE" check "$CONT_DIR/log"
    # The first waiter at least was handed the lock by the holder's release (the later ones
    # may have been sent an acquire by the wake-up that tells the next waiter to look again).
    grep "was handed over by its release" "$CONT_DIR/w1.err"
}

@test "a quorum head waiter killed while queued holds the lock for the claim window, not the TTL" {
    CONT_DIR="$BATS_TEST_TMPDIR/contenders"
    mkdir -p "$CONT_DIR"
    # A TTL of a minute: the dead head's place would keep the lock reserved for the holder's TTL
    # and a grace after it, had the release not handed the lock to it.
    q_hold qdead "$BATS_TEST_TMPDIR/go" -t 60s
    probe_run head qdead -t 60s
    local head=$REPLY
    wait_for 10 queued_on_majority qdead 1
    probe_run next qdead -t 60s
    local next=$REPLY
    wait_for 10 queued_on_majority qdead 2
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
    # what the minute's TTL costs without the hand-off.
    [ "$took" -lt 30000 ]
    q_nothing_left qdead
}

# A loop of contenders for the fault tests of issue 16 (restart.bats, sentinel_failover.bats,
# cluster_failover.bats): background loops of `redlock-run --wait` on one lock, each command
# lease_probe.py, which logs its start (with its REDLOCK_FENCE) and its end on one clock; each
# loop logs every run's exit status. A test starts them, injects its fault while they contend,
# lets them make progress after it, stops them and checks the log. Load after helpers.bash.
# shellcheck shell=bash

PROBE="$BATS_TEST_DIRNAME/lease_probe.py"

# contenders_start N NAME [OPTIONS...]: N loops, each running
# `redlock-run OPTIONS NAME -- lease_probe.py hold ...` (work of CONTENDER_WORK seconds, 0.2 by
# default) again and again until contenders_stop. Logs to $CONT_DIR/log; each run's stderr is in
# $CONT_DIR/TAG.err. Started again in the same test, they go on with the same log (tags of a
# later round start with its number), so the check covers every round.
contenders_start() {
    local n=$1 name=$2 i
    shift 2
    CONT_DIR="$BATS_TEST_TMPDIR/contenders"
    mkdir -p "$CONT_DIR"
    rm -f "$CONT_DIR/stop"
    touch "$CONT_DIR/log"
    CONT_ROUND=$((${CONT_ROUND:-0} + 1))
    CONTENDERS=
    for i in $(seq 1 "$n"); do
        contender_loop "$([ "$CONT_ROUND" = 1 ] || echo "r$CONT_ROUND.")c$i" "$name" "$@" 3>&- &
        CONTENDERS="$CONTENDERS $!"
    done
}

# One contender: "exit TAG STATUS [key-lost]" after each run; key-lost when the run said that its
# key was gone or held another token (at a renewal, or at the release when the command ended
# first), the loss the man page admits an overlap for.
contender_loop() {
    local stem=$1 name=$2 r=0 tag status lost
    shift 2
    while [ ! -e "$CONT_DIR/stop" ]; do
        r=$((r + 1))
        tag="$stem.$r"
        status=0
        "$RL" "$@" "$name" -- /usr/bin/python3 "$PROBE" hold "$CONT_DIR/log" "$tag" \
            "$CONT_DIR/pgid.$tag" "${CONTENDER_WORK:-0.2}" >/dev/null 2>"$CONT_DIR/$tag.err" ||
            status=$?
        lost=
        grep -q -e "no longer holds this run's token" -e "was gone at release" \
            -e "was taken over by another holder" "$CONT_DIR/$tag.err" && lost=" key-lost"
        echo "exit $tag $status$lost" >>"$CONT_DIR/log"
    done
}

# contenders_progress SECONDS N: waits until N more commands have started than had so far. The
# callers give 60s: a bound for a stuck loop, not a speed; under ThreadSanitizer, beside the
# heaviest files, four contenders once took more than 10s to start three commands.
contenders_progress() {
    local target=$(($(starts_in "$CONT_DIR/log") + $2))
    wait_for "$1" starts_reach "$target"
}
starts_reach() { [ "$(starts_in "$CONT_DIR/log")" -ge "$1" ]; }

# Asks every loop to end after its current run and waits for them (and for every command's
# observer to log its end).
contenders_stop() {
    local pid
    touch "$CONT_DIR/stop"
    for pid in ${CONTENDERS:-}; do
        wait_for 60 pid_gone "$pid" || contender_kill "$pid"
        wait "$pid" 2>/dev/null || true
    done
    CONTENDERS=
    wait_for 10 all_ended "$CONT_DIR/log"
}

# A loop that did not end, its redlock-run and that run's command.
contender_kill() {
    local child
    for child in $(pgrep -P "$1"); do kill -9 "$child" 2>/dev/null || true; done
    kill -9 "$1" 2>/dev/null || true
}

# For teardown: ends whatever a failed test left running.
contenders_cleanup() {
    [ -n "${CONT_DIR:-}" ] || return 0
    touch "$CONT_DIR/stop"
    local pid
    for pid in ${CONTENDERS:-}; do contender_kill "$pid"; done
    CONTENDERS=
    rl_cleanup "$CONT_DIR"/pgid.*
}

# contenders_check [--admit-key-lost]: the checker over the log (no overlap outside what the
# option admits, fences unique and growing in start order, every command ended), and every run
# ended 0 or 76 (a lost lock): a waiter rides out the fault, it never gives up with time left.
contenders_check() {
    run /usr/bin/python3 "$PROBE" check "$CONT_DIR/log" "$@"
    echo "$output"
    echo "# $(tail -n 1 <<<"$output")" >&3
    assert_success
    local other tag
    other=$(awk '$1 == "exit" && $3 != 0 && $3 != 76 { print $2 }' "$CONT_DIR/log")
    if [ -n "$other" ]; then
        for tag in $other; do grep "^exit $tag " "$CONT_DIR/log"; cat "$CONT_DIR/$tag.err"; done
        return 1
    fi
    # Some runs held the lock, and no run was lost without saying why.
    [ "$(starts_in "$CONT_DIR/log")" -gt 0 ]
}

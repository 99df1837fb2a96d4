# Many holders of one name (--permits N, --shared) under the commands' own start/end log
# (permit_probe.py), for permits.bats, shared.bats and their quorum twins: the same scenarios,
# on one node or on a quorum. Load after helpers.bash; PROBE names permit_probe.py.
# shellcheck shell=bash

starts_at_least() { [ "$(starts_in "$1")" -ge "$2" ]; }

# crowd ROUNDS SECONDS MODE NAME [OPTIONS...]: in the background, ROUNDS runs in a row of
# `redlock-run OPTIONS NAME -- permit_probe.py hold $BATS_TEST_TMPDIR/log SECONDS [MODE]` (MODE
# '-' for none); a run that fails is noted in $BATS_TEST_TMPDIR/failed. Adds its pid to PIDS. The
# runs' stderr goes to the file CROWD_ERR names, when set (appended).
crowd() {
    local rounds=$1 seconds=$2 mode=$3 name=$4 round
    shift 4
    [ "$mode" != - ] || mode=
    (for round in $(seq "$rounds"); do
        "$RL" "$@" "$name" -- "$PROBE" hold "$BATS_TEST_TMPDIR/log" "$seconds" $mode \
            2>>"${CROWD_ERR:-/dev/stderr}" ||
            echo "a run of $* $name${mode:+ ($mode)} failed: $?" >>"$BATS_TEST_TMPDIR/failed"
    done) &
    PIDS+=($!)
}

# crowd_wait: waits for every crowd, and fails naming the runs that failed.
crowd_wait() {
    local p
    for p in "${PIDS[@]}"; do wait "$p"; done
    PIDS=()
    [ ! -e "$BATS_TEST_TMPDIR/failed" ] || { cat "$BATS_TEST_TMPDIR/failed"; false; }
}

# writer_through_readers NAME WAIT BOUND: four overlapping --shared readers of NAME, each
# starting its next run as soon as its last one ends (without writer preference the name would
# never be free), then one exclusive run with --wait WAIT, which must get in; the readers go on
# after it. wait_for bounds are BOUND seconds. Checks the log.
writer_through_readers() {
    local name=$1 wait=$2 bound=$3 log=$BATS_TEST_TMPDIR/log i
    for i in 1 2 3 4; do
        (while [ ! -e "$BATS_TEST_TMPDIR/stop" ]; do
            "$RL" --shared --wait "$wait" "$name" -- "$PROBE" hold "$log" 0.4 S || exit 1
        done) &
        PIDS+=($!)
        sleep 0.1
    done
    wait_for "$bound" starts_at_least "$log" 6
    run "$RL" --wait "$wait" "$name" -- "$PROBE" hold "$log" 0.1 X
    assert_success
    local ended
    ended=$(starts_in "$log")
    wait_for "$bound" starts_at_least "$log" $((ended + 2))
    touch "$BATS_TEST_TMPDIR/stop"
    for i in "${PIDS[@]}"; do wait "$i"; done
    PIDS=()
    run "$PROBE" check-shared "$log"
    echo "$output"
    assert_success
    [ "$(grep -c '^start .* X ' "$log")" = 1 ]
}

# probe_run TAG MODE OPTIONS... NAME: a background `redlock-run --wait 60s OPTIONS NAME` whose
# command is permit_probe.py (logging to $BATS_TEST_TMPDIR/log with MODE, '-' for none; work:
# until the file $GATE exists when GATE is set, else 0.05s), its stderr in
# $BATS_TEST_TMPDIR/TAG.err; its pid in REPLY and in PIDS, and the pid of its command, once it
# runs, in $BATS_TEST_TMPDIR/TAG.pid.
probe_run() {
    local tag=$1 mode=$2 work=${GATE:+until:$GATE}
    shift 2
    [ "$mode" != - ] || mode=
    # shellcheck disable=SC2016 # (expanded by that sh)
    "$RL" --wait 60s "$@" -- sh -c 'echo $$ > "$0"; exec "$@"' \
        "$BATS_TEST_TMPDIR/$tag.pid" "$PROBE" hold "$BATS_TEST_TMPDIR/log" "${work:-0.05}" \
        ${mode:+"$mode"} 2>"$BATS_TEST_TMPDIR/$tag.err" &
    REPLY=$!
    PIDS+=($!)
}
# start_order TAG...: those of the tags whose commands have started, in the order they started.
start_order() {
    local tag pids=()
    for tag in "$@"; do
        [ -s "$BATS_TEST_TMPDIR/$tag.pid" ] && pids+=("$(cat "$BATS_TEST_TMPDIR/$tag.pid")=$tag")
    done
    awk -v map="${pids[*]}" '
        BEGIN {
            n = split(map, m, " ")
            for (i = 1; i <= n; i++) { split(m[i], kv, "="); tag[kv[1]] = kv[2] }
        }
        $1 == "start" && ($5 in tag) { printf "%s ", tag[$5] }' "$BATS_TEST_TMPDIR/log"
}
# has_started TAG: the command of `probe_run TAG` has logged its start.
has_started() {
    [ -s "$BATS_TEST_TMPDIR/$1.pid" ] &&
        awk -v p="$(cat "$BATS_TEST_TMPDIR/$1.pid")" '$1 == "start" && $5 == p { f = 1 }
            END { exit !f }' "$BATS_TEST_TMPDIR/log"
}

#!/usr/bin/env bats
# --metrics-file: Prometheus text for node_exporter's textfile collector, checked with the real
# parser (python3-prometheus-client); several runs of several locks accumulate in one file.
load helpers
bats_require_minimum_version 1.5.0

setup() {
    /usr/bin/python3 -c 'import prometheus_client' 2>/dev/null ||
        skip "python3-prometheus-client not installed (tests/deps.sh)"
    redis_start
    METRICS=$BATS_TEST_TMPDIR/textfile/redlock.prom
    mkdir -p "${METRICS%/*}"
}
teardown() {
    rl_cleanup
    if [ -s "${LOCKER:-}" ]; then kill "$(cat "$LOCKER")" 2>/dev/null || true; fi
    if [ -n "${OPEN_DIR:-}" ]; then rm -rf "$OPEN_DIR"; fi
    redis_stop
}

# sample NAME LOCK [OUTCOME]: the value the real parser reads for that sample.
sample() {
    /usr/bin/python3 - "$METRICS" "$@" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
path, name, lock = sys.argv[1:4]
outcome = sys.argv[4] if len(sys.argv) > 4 else None
for family in text_string_to_metric_families(open(path).read()):
    for s in family.samples:
        if s.name == name and s.labels.get("lock") == lock and s.labels.get("outcome") == outcome:
            print(int(s.value) if s.value == int(s.value) else s.value)
            sys.exit(0)
sys.exit(1)
PY
}

@test "runs of several locks accumulate outcome counters and last-run gauges in one file" {
    "$RL" --metrics-file "$METRICS" nightly true
    "$RL" --metrics-file "$METRICS" nightly true
    run -4 "$RL" --metrics-file "$METRICS" nightly sh -c 'exit 4'
    REDLOCK_METRICS_FILE=$METRICS "$RL" 'odd "name"\' true
    run -0 sample redlock_run_outcomes_total nightly ran
    [ "$output" = 3 ]
    run -0 sample redlock_run_last_exit_status nightly
    [ "$output" = 4 ]
    run -0 sample redlock_run_outcomes_total 'odd "name"\' ran
    [ "$output" = 1 ]
    local now start end ok
    now=$(date +%s)
    start=$(sample redlock_run_last_start_timestamp_seconds nightly)
    end=$(sample redlock_run_last_end_timestamp_seconds nightly)
    ok=$(sample redlock_run_last_success_timestamp_seconds nightly)
    [ "${start%.*}" -le "${end%.*}" ] && [ "${end%.*}" -le "$now" ] && [ "${ok%.*}" -le "${end%.*}" ]
    [ $((now - ${ok%.*})) -lt 60 ]
    sample redlock_run_last_duration_seconds nightly
    # Nothing left behind but the file itself (the temp file was renamed over it).
    [ "$(ls "${METRICS%/*}")" = redlock.prom ]
}

@test "busy and skipped runs count without touching the last-run gauges" {
    local d=$BATS_TEST_TMPDIR
    "$RL" job sh -c "touch $d/held; while [ ! -e $d/go ]; do sleep 0.02; done" &
    RL_PID=$!
    wait_for 10 file_exists "$d/held"
    run -75 "$RL" --metrics-file "$METRICS" job true
    touch "$d/go"
    wait "$RL_PID"
    RL_PID=
    run -0 sample redlock_run_outcomes_total job busy
    [ "$output" = 1 ]
    run -1 sample redlock_run_last_start_timestamp_seconds job
    "$RL" --metrics-file "$METRICS" --once-per 1h job true
    run -75 "$RL" --metrics-file "$METRICS" --once-per 1h job true
    run -0 sample redlock_run_outcomes_total job skipped-slot
    [ "$output" = 1 ]
}

@test "20 concurrent runs of different locks lose no update (flock of the writers' lock file)" {
    local i pids=()
    for i in $(seq 1 20); do
        "$RL" -w 20s --metrics-file "$METRICS" "lock$((i % 4))" true &
        pids+=($!)
    done
    wait "${pids[@]}"
    local total=0 n
    for i in 0 1 2 3; do
        n=$(sample redlock_run_outcomes_total "lock$i" ran)
        total=$((total + n))
    done
    [ "$total" -eq 20 ]
}

# The failures the shipped alerts exist for (packaging/examples/redlock-run.rules.yml, tested by
# promtool in ctest's rules.alerts): each leaves the series its alert reads.
@test "a command that cannot be started leaves exit status 127 and every outcome counter" {
    run -127 "$RL" --metrics-file "$METRICS" job /nonexistent/command
    run -0 sample redlock_run_last_exit_status job
    [ "$output" = 127 ]
    run -0 sample redlock_run_outcomes_total job failed-to-start
    [ "$output" = 1 ]
    local outcome
    for outcome in ran busy skipped-slot lost timed-out stuck; do
        run -0 sample redlock_run_outcomes_total job "$outcome"
        [ "$output" = 0 ]
    done
    # Never succeeded: 0, which the no-success alert sees as 1970.
    run -0 sample redlock_run_last_success_timestamp_seconds job
    [ "$output" = 0 ]
    run -0 sample redlock_run_running job
    [ "$output" = 0 ]
}

running_is() { [ "$(sample redlock_run_running job 2>/dev/null)" = "$1" ]; }

@test "a command shows as running in the file while it runs, and not after" {
    local d=$BATS_TEST_TMPDIR
    rl_start --metrics-file "$METRICS" job -- sh -c "while [ ! -e '$d/go' ]; do sleep 0.02; done"
    wait_for 10 running_is 1
    run -0 sample redlock_run_last_start_timestamp_seconds job
    [ "${output%.*}" -ge $(($(date +%s) - 60)) ]
    run -0 sample redlock_run_outcomes_total job ran
    [ "$output" = 0 ]
    touch "$d/go"
    rl_finish 10
    assert_equal "$RL_STATUS" 0
    running_is 0
    run -0 sample redlock_run_outcomes_total job ran
    [ "$output" = 1 ]
}

@test "a heartbeat file in a missing directory is a usage error before the lock is taken" {
    run -64 --separate-stderr "$RL" --heartbeat-file /nonexistent/dir/beat --heartbeat-timeout 1m job touch "$BATS_TEST_TMPDIR/ran"
    [ "$stderr" = "redlock-run: --heartbeat-file '/nonexistent/dir/beat': its directory '/nonexistent/dir' does not exist" ]
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "a metrics file in a missing directory is a usage error before the lock is taken" {
    run -64 --separate-stderr "$RL" --metrics-file /nonexistent/dir/x.prom job touch "$BATS_TEST_TMPDIR/ran"
    [ "$stderr" = "redlock-run: --metrics-file '/nonexistent/dir/x.prom': its directory '/nonexistent/dir' does not exist" ]
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    key_absent job
}

# The file-system attacks of issue 36, as root runs the tool from cron: another user who can
# write the textfile directory plants links, FIFOs and devices, or holds a flock.

# secret_file: a root-only file ($SECRET) that no metrics update may touch.
secret_file() {
    SECRET=$BATS_TEST_TMPDIR/secret
    printf 'root only\n' >"$SECRET"
    chmod 600 "$SECRET"
}
secret_intact() {
    [ "$(cat "$SECRET")" = "root only" ] && [ "$(stat -c %a "$SECRET")" = 600 ]
}

# A run that waits (in its command) for $BATS_TEST_TMPDIR/go, so that a test can plant something
# while it holds the lock; RL_PID is redlock-run's own pid.
start_gated_run() {
    local d=$BATS_TEST_TMPDIR
    rm -f "$d/go" "$d/started"
    rl_start --metrics-file "$METRICS" job sh -c "touch $d/started; while [ ! -e $d/go ]; do sleep 0.02; done"
    wait_for 10 file_exists "$d/started"
    # The command's start is written to the file from a thread of its own, which may still be
    # replacing PATH when the command runs: a test that swaps PATH must wait until it has.
    wait_for 10 running_is 1
}

@test "a symlink planted at the writer's temp name is not followed" {
    secret_file
    start_gated_run
    # The name the writer used to pick: PATH.<pid>.tmp.
    local planted=$METRICS.$RL_PID.tmp
    ln -s "$SECRET" "$planted"
    touch "$BATS_TEST_TMPDIR/go"
    rl_finish 20
    [ "$RL_STATUS" -eq 0 ]
    secret_intact
    [ -L "$planted" ]
    run -0 sample redlock_run_outcomes_total job ran
    [ "$output" = 1 ]
}

@test "a FIFO planted at the writer's temp name does not block the run" {
    start_gated_run
    local planted=$METRICS.$RL_PID.tmp
    mkfifo "$planted"
    touch "$BATS_TEST_TMPDIR/go"
    rl_finish 20
    [ "$RL_STATUS" -eq 0 ]
    [ -p "$planted" ]
    run -0 sample redlock_run_outcomes_total job ran
    [ "$output" = 1 ]
}

@test "taken temporary names are retried a bounded number of times, never written through" {
    # getrandom answering zeros (LD_PRELOAD) makes every temporary name the same, known one.
    sanitized && skip "LD_PRELOAD before a sanitizer runtime"
    command -v cc >/dev/null || skip "no C compiler"
    local zero=$BATS_TEST_TMPDIR/zero_random.so
    printf '%s\n' '#include <string.h>' '#include <sys/types.h>' \
        'ssize_t getrandom(void *b, size_t n, unsigned f) { (void)f; memset(b, 0, n); return (ssize_t)n; }' |
        cc -shared -fPIC -x c -o "$zero" -
    secret_file
    "$RL" --metrics-file "$METRICS" job true
    ln -s "$SECRET" "${METRICS%/*}/.redlock.prom.0000000000000000.tmp"
    run -0 --separate-stderr timeout 20 env LD_PRELOAD="$zero" "$RL" --metrics-file "$METRICS" job true
    [[ "$stderr" == *"could not update the metrics file"*"16 random temporary names"*"taken"* ]]
    secret_intact
    rm "${METRICS%/*}/.redlock.prom.0000000000000000.tmp"
    mkfifo "${METRICS%/*}/.redlock.prom.0000000000000000.tmp"
    run -0 --separate-stderr timeout 20 env LD_PRELOAD="$zero" "$RL" --metrics-file "$METRICS" job true
    [[ "$stderr" == *"16 random temporary names"*"taken"* ]]
    # Left as it was: one run counted, not three.
    run -0 sample redlock_run_outcomes_total job ran
    [ "$output" = 1 ]
}

@test "a symlink, device, FIFO, directory or socket at PATH is a usage error before the command runs" {
    secret_file
    local dir=${METRICS%/*} kind
    ln -s "$SECRET" "$dir/link.prom"
    mknod "$dir/null.prom" c 1 3
    mkfifo "$dir/fifo.prom"
    mkdir "$dir/dir.prom"
    /usr/bin/python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$dir/sock.prom"
    for kind in link null fifo dir sock; do
        rm -f "$BATS_TEST_TMPDIR/ran"
        run -64 --separate-stderr timeout 20 "$RL" --metrics-file "$dir/$kind.prom" job touch "$BATS_TEST_TMPDIR/ran"
        [[ "$stderr" == "redlock-run: "*"$dir/$kind.prom"* ]]
        [ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
        [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    done
    # The environment variable too: REDLOCK_METRICS_FILE=/dev/null does not "turn it off".
    run -64 --separate-stderr env REDLOCK_METRICS_FILE="$dir/null.prom" "$RL" job true
    [[ "$stderr" == *"$dir/null.prom"*"device"* ]]
    [ -L "$dir/link.prom" ] && [ -c "$dir/null.prom" ] && [ -p "$dir/fifo.prom" ]
    [ -d "$dir/dir.prom" ] && [ -S "$dir/sock.prom" ]
    secret_intact
}

@test "a symlink or FIFO that appears at PATH during the run is left alone, with a warning" {
    secret_file
    "$RL" --metrics-file "$METRICS" job true
    start_gated_run
    rm "$METRICS"
    ln -s "$SECRET" "$METRICS"
    touch "$BATS_TEST_TMPDIR/go"
    rl_finish 20
    [ "$RL_STATUS" -eq 0 ]
    grep -q 'could not update the metrics file' "$RL_ERR"
    [ -L "$METRICS" ]
    secret_intact
    rm "$METRICS"
    "$RL" --metrics-file "$METRICS" job true
    start_gated_run
    rm "$METRICS"
    mkfifo "$METRICS"
    touch "$BATS_TEST_TMPDIR/go"
    rl_finish 20
    [ "$RL_STATUS" -eq 0 ]
    grep -q 'could not update the metrics file' "$RL_ERR"
    [ -p "$METRICS" ]
    # Nothing left behind in the directory but what the test put there (and the lock file).
    [ "$(ls "${METRICS%/*}")" = redlock.prom ]
}

@test "an existing PATH larger than 1 MiB is left alone, with a warning" {
    truncate -s 2M "$METRICS"
    run -0 --separate-stderr "$RL" --metrics-file "$METRICS" job true
    [[ "$stderr" == *"could not update the metrics file"*"1 MiB"* ]]
    [ "$(stat -c %s "$METRICS")" -eq $((2 * 1024 * 1024)) ]
}

@test "a new file is 0644 under umask 077; an existing file keeps its mode and owner" {
    (umask 077 && "$RL" --metrics-file "$METRICS" job true)
    [ "$(stat -c %a:%u "$METRICS")" = 644:0 ]
    chmod 640 "$METRICS"
    chown 4321:4322 "$METRICS"
    (umask 077 && "$RL" --metrics-file "$METRICS" job true)
    [ "$(stat -c %a:%u:%g "$METRICS")" = 640:4321:4322 ]
    run -0 sample redlock_run_outcomes_total job ran
    [ "$output" = 2 ]
}

@test "a flock held on the directory by another process neither delays nor stales the update" {
    local dir=${METRICS%/*}
    LOCKER=$BATS_TEST_TMPDIR/locker.pid
    flock "$dir" sh -c "echo \$\$ >$LOCKER.new && mv $LOCKER.new $LOCKER && exec sleep 600" 3>&- &
    local locker=$!
    wait_for 10 file_exists "$LOCKER"
    run -0 --separate-stderr "$RL" --metrics-file "$METRICS" job true
    kill "$(cat "$LOCKER")"
    wait "$locker" || true
    [ -z "$stderr" ]
    run -0 sample redlock_run_outcomes_total job ran
    [ "$output" = 1 ]
    # The writers' own lock file: only the writing user can open (and so flock) it.
    [ "$(stat -c %a:%u "$dir/.redlock.prom.lock")" = 600:0 ]
}

@test "another user who can read the directory cannot open the writers' lock file" {
    # A directory every user can reach (the test's own temp directory is root's alone).
    OPEN_DIR=$(mktemp -d /tmp/redlock-metrics.XXXXXX)
    chmod 755 "$OPEN_DIR"
    "$RL" --metrics-file "$OPEN_DIR/redlock.prom" job true
    [ -f "$OPEN_DIR/.redlock.prom.lock" ]
    run setpriv --reuid=65534 --regid=65534 --clear-groups flock -n "$OPEN_DIR/.redlock.prom.lock" true
    [ "$status" -ne 0 ]
    [[ "$output" == *"Permission denied"* ]]
    # The directory itself, as the writers used to lock it, any such user can flock.
    run -0 setpriv --reuid=65534 --regid=65534 --clear-groups flock -n "$OPEN_DIR" true
}

@test "a writer stuck holding the lock file delays a run by a bounded wait, then it updates anyway" {
    local dir=${METRICS%/*}
    LOCKER=$BATS_TEST_TMPDIR/locker.pid
    : >"$dir/.redlock.prom.lock"
    flock "$dir/.redlock.prom.lock" sh -c "echo \$\$ >$LOCKER.new && mv $LOCKER.new $LOCKER && exec sleep 600" 3>&- &
    local locker=$!
    wait_for 10 file_exists "$LOCKER"
    run -0 --separate-stderr "$RL" --metrics-file "$METRICS" job true
    kill "$(cat "$LOCKER")"
    wait "$locker" || true
    [[ "$stderr" == *"stayed locked for 5s"*"updating it unlocked"* ]]
    run -0 sample redlock_run_outcomes_total job ran
    [ "$output" = 1 ]
}

@test "a lock name with invalid UTF-8 or a C1 control keeps the whole textfile valid" {
    # (C0 controls and DEL are refused in lock names; NEL, U+0085, is not.)
    local bad=$'bad\xff\xc2\x85name'
    "$RL" --metrics-file "$METRICS" nightly true
    "$RL" --metrics-file "$METRICS" "$bad" true
    "$RL" --metrics-file "$METRICS" "$bad" true
    # Strict UTF-8, lines split at \n only, every family parsed; one series per lock.
    run -0 /usr/bin/python3 - "$METRICS" <<'PY'
import sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1], "rb").read().decode("utf-8")
ran = {}
for family in text_string_to_metric_families(text):
    for s in family.samples:
        if s.name == "redlock_run_outcomes_total" and s.labels["outcome"] == "ran":
            assert s.labels["lock"] not in ran, s.labels
            ran[s.labels["lock"]] = int(s.value)
print(ascii(sorted(ran.items())))
PY
    [ "$output" = "[('bad\\ufffd\\ufffdname', 2), ('nightly', 1)]" ]
}

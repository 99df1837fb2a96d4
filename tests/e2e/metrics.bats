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

@test "20 concurrent runs of different locks lose no update (flock on the directory)" {
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

@test "a metrics file that cannot be written is a warning, not a failure" {
    run -0 --separate-stderr "$RL" --metrics-file /nonexistent/dir/x.prom job true
    [[ "$stderr" == *"could not update the metrics file"* ]]
}

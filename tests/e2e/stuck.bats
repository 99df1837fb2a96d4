#!/usr/bin/env bats
# Stuck jobs: --heartbeat-file/--heartbeat-timeout and --max-renewals stop the command like a
# lost lock (SIGTERM, then SIGKILL after --kill-after), release the lock and exit 79.
load helpers
bats_require_minimum_version 1.5.0

setup() { redis_start; }
teardown() {
    rl_cleanup
    redis_stop
}

@test "a command that stops touching its heartbeat file is stopped as stuck (exit 79)" {
    local d=$BATS_TEST_TMPDIR
    touch "$d/beat"
    # Beats for a while (longer than the timeout in total), then hangs.
    run -79 --separate-stderr "$RL" --heartbeat-file "$d/beat" --heartbeat-timeout 300ms job sh -c \
        'for i in 1 2 3 4 5 6 7 8; do touch "$REDLOCK_HEARTBEAT_FILE"; sleep 0.1; done; echo hung > "$0/hung"; sleep 30' "$d"
    [ -e "$d/hung" ]
    [[ "$stderr" == *"is stuck"* ]]
    key_absent job
    run -0 "$RL" history --json --limit 1 job
    echo "$output" | jq -e '.outcome == "stuck" and .signal == 15'
}

@test "a command that ignores SIGTERM is killed after --kill-after" {
    local d=$BATS_TEST_TMPDIR
    run -79 "$RL" --heartbeat-file "$d/none" --heartbeat-timeout 200ms --kill-after 200ms job \
        sh -c 'trap "" TERM; sleep 30'
    run -0 "$RL" history --json --limit 1 job
    echo "$output" | jq -e '.outcome == "stuck" and .signal == 9'
}

@test "--max-renewals: a run that outlives N renewals is stuck" {
    # A 2s lease, renewed every 250ms: the second renewal comes within a second, and a machine
    # busy with a sanitizer pass has time for each (a 300ms lease once ran out there: 76).
    run -79 "$RL" -t 2s --renew-every 250ms --max-renewals 2 job sleep 30
    run -0 "$RL" -t 2s --renew-every 250ms --max-renewals 20 job true
}

@test "without the options a silent command is never stopped" {
    run -0 "$RL" job sleep 0.3
    run -64 "$RL" --heartbeat-file x job true
    run -64 "$RL" --heartbeat-timeout 1s job true
    run -64 "$RL" --max-renewals -1 job true
}

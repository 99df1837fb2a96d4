#!/usr/bin/env bats
# Stuck jobs: --heartbeat-file/--heartbeat-timeout and --max-renewals stop the command like a
# lost lock (SIGTERM, then SIGKILL after --kill-after), release the lock and exit 79. When each
# decision falls is proved on virtual time (tests/unit/run/run_test.cpp, VirtualRunTest); here,
# what needs the real binary and a real command.
load helpers
bats_require_minimum_version 1.5.0

setup() { redis_start; }
teardown() {
    rl_cleanup
    redis_stop
}

@test "the command finds its heartbeat file in REDLOCK_HEARTBEAT_FILE" {
    local d=$BATS_TEST_TMPDIR
    run -0 "$RL" --heartbeat-file "$d/beat" --heartbeat-timeout 60s job sh -c \
        'echo beat > "$REDLOCK_HEARTBEAT_FILE"'
    [ "$(cat "$d/beat")" = beat ]
}

@test "without the options a silent command is never stopped" {
    run -0 "$RL" job sleep 0.3
    run -64 "$RL" --heartbeat-file x job true
    run -64 "$RL" --heartbeat-timeout 1s job true
    run -64 "$RL" --max-renewals -1 job true
}

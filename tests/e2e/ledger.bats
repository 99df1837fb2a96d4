#!/usr/bin/env bats
# The run ledger: one entry per run in a capped list beside the lock, `history` (table and JSON
# lines), status's last run and last success, and a ledger that cannot be written never changing
# what the run does.
load helpers
bats_require_minimum_version 1.5.0

setup() { redis_start; }
teardown() {
    rl_cleanup
    [ -z "${Q_PORT:-}" ] || quorum_stop
    redis_stop
}

@test "each run appends one entry: outcome, exit status or signal, fence, host, pid and user" {
    run -0 "$RL" job true
    run -3 "$RL" job sh -c 'exit 3'
    run -137 "$RL" job sh -c 'kill -9 $$'
    run -0 "$RL" history --json job
    [ "${#lines[@]}" -eq 3 ]
    echo "${lines[0]}" | jq -e '.outcome == "ran" and .signal == 9 and .exit_status == null'
    echo "${lines[1]}" | jq -e '.exit_status == 3'
    echo "${lines[2]}" | jq -e --arg h "$(hostname)" --arg u "$(id -un)" \
        '.exit_status == 0 and .host == $h and .user == $u and .pid > 0 and .fence > 0
         and .end_ms >= .start_ms and .duration_ms >= 0 and (has("command") | not)'
    # Newest first: fences only grow.
    [ "$(echo "${lines[0]}" | jq .fence)" -gt "$(echo "${lines[2]}" | jq .fence)" ]
    run -0 "$RL" history job
    assert_line --index 0 --partial "OUTCOME"
    assert_line --index 1 --partial "signal 9"
}

@test "the command line is recorded only with --hold-info" {
    run -0 "$RL" job echo secret-arg
    run -0 "$RL" --hold-info job echo visible-arg
    run -0 "$RL" history --json job
    echo "${lines[0]}" | jq -e '.command == "echo visible-arg"'
    [ "$(rcli LRANGE '{job}:ledger' 0 -1 | grep -c secret-arg)" -eq 0 ]
}

@test "--ledger-size caps the list and 0 writes none" {
    local i
    for i in 1 2 3 4 5; do "$RL" --ledger-size 3 job true; done
    [ "$(rcli LLEN '{job}:ledger')" -eq 3 ]
    "$RL" --ledger-size 0 other true
    key_absent '{other}:ledger'
    run -64 "$RL" --ledger-size 10001 job true
    run -64 "$RL" --ledger-size -1 job true
    REDLOCK_LEDGER_SIZE=2 "$RL" job2 true
}

@test "busy runs are recorded only with --ledger-busy" {
    local d=$BATS_TEST_TMPDIR
    "$RL" job sh -c "touch $d/held; while [ ! -e $d/go ]; do sleep 0.02; done" &
    RL_PID=$!
    wait_for 10 file_exists "$d/held"
    run -75 "$RL" job true
    run -75 "$RL" --ledger-busy job true
    touch "$d/go"
    wait "$RL_PID"
    RL_PID=
    run -0 "$RL" history --json job
    [ "${#lines[@]}" -eq 2 ]
    echo "${lines[1]}" | jq -e '.outcome == "busy" and .fence == 0'
    echo "${lines[0]}" | jq -e '.outcome == "ran"'
}

@test "outcomes: lost, timed-out and failed-to-start" {
    run -76 "$RL" job sh -c "redis-cli -p $REDIS_PORT DEL job >/dev/null"
    run -124 "$RL" --max-runtime 200ms job sleep 5
    run -127 "$RL" job /nonexistent/command
    run -0 "$RL" history --json --limit 3 job
    [ "$(printf '%s\n' "${lines[@]}" | jq -r .outcome | tr '\n' ' ')" = "failed-to-start timed-out lost " ]
    run -0 "$RL" history --json --limit 1 job
    [ "${#lines[@]}" -eq 1 ]
    run -64 "$RL" history --limit 0 job
    run -64 "$RL" --limit 3 job true
    run -64 "$RL" status --limit 3 job
}

@test "status shows the last run and the last success" {
    "$RL" job true
    "$RL" job false || true
    run -1 "$RL" status job
    assert_output --regexp "last run: .*ran, exit 1"
    assert_output --regexp "last ok: .*ran, exit 0"
}

@test "a ledger that cannot be written is a warning and changes neither start nor exit status" {
    rcli SET '{job}:ledger' not-a-list
    run -3 --separate-stderr "$RL" job sh -c 'exit 3'
    [[ "$stderr" == *"could not record the run of lock 'job' in its ledger"* ]]
    run -0 "$RL" job true
}

@test "the ledger write is one round trip after the command, before the release" {
    # MONITOR sees every command: between the acquire and the release exactly one ledger script.
    rcli MONITOR > "$BATS_TEST_TMPDIR/monitor" &
    local mon=$!
    wait_for 5 rcli_quiet PING
    sleep 0.1
    "$RL" job true
    wait_for 5 grep -q '"DEL"' "$BATS_TEST_TMPDIR/monitor"
    kill "$mon"
    wait "$mon" 2>/dev/null || true
    local calls
    calls=$(grep -c '"EVALSHA"\|"EVAL"' "$BATS_TEST_TMPDIR/monitor")
    # acquire + ledger + release (an EVALSHA miss may add one EVAL each)
    [ "$(grep -c '"LPUSH"' "$BATS_TEST_TMPDIR/monitor")" -eq 1 ]
    [ "$(grep -n '"LPUSH"' "$BATS_TEST_TMPDIR/monitor" | cut -d: -f1)" -lt \
      "$(grep -n '"DEL" "job"' "$BATS_TEST_TMPDIR/monitor" | cut -d: -f1)" ]
    [ "$calls" -ge 3 ]
}

@test "quorum: history merges the nodes' copies, each run once" {
    load quorum_helpers
    quorum_start 3
    export REDLOCK_URL=$QUORUM_URL REDLOCK_NODE_TIMEOUT=200ms
    "$RL" job true
    "$RL" job sh -c 'exit 2' || true
    run -0 "$RL" history --json job
    [ "${#lines[@]}" -eq 2 ]
    q_down 0
    run -0 --separate-stderr "$RL" history --json job
    [ "${#lines[@]}" -eq 2 ]
}

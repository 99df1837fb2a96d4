#!/usr/bin/env bats
# The run ledger: one entry per run in a capped list beside the lock, `history` (table and JSON
# lines), status's last run and last success, and a ledger that cannot be written never changing
# what the run does.
# How history, status's last runs and list --last-runs are shown (exact text and JSON) is
# proved over a fake inspector in tests/unit/inspect/inspect_commands_test.cpp; here, what real
# runs record and what is read back.
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
    [ "$(cli "$REDIS_PORT" LRANGE '{job}:ledger' 0 -1 | grep -c secret-arg)" -eq 0 ]
}

@test "--ledger-size caps the list and 0 writes none" {
    local i
    for i in 1 2 3 4 5; do "$RL" --ledger-size 3 job true; done
    [ "$(cli "$REDIS_PORT" LLEN '{job}:ledger')" -eq 3 ]
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
    run -1 "$RL" status --json job
    echo "$output" | jq -e '.last_run.outcome == "ran" and .last_run.exit_status == 1
        and .last_success.exit_status == 0 and .last_success.end_ms <= .last_run.end_ms'
    # The last success is found however far back it is among the kept entries.
    for _ in 1 2 3 4 5; do "$RL" job false || true; done
    run -1 "$RL" status --json job
    echo "$output" | jq -e '.last_success.exit_status == 0'
    # A lock without a ledger: none, in both forms.
    run -1 "$RL" status --json other
    echo "$output" | jq -e '.last_run == null and .last_success == null'
    run -1 "$RL" status other
    refute_output --partial "last run"
}

@test "list --last-runs adds each held lock's last run and last success" {
    "$RL" job true
    "$RL" job sh -c 'exit 4' || true
    hold job
    run -0 "$RL" list --last-runs --json
    echo "$output" | jq -e '.[0].name == "job" and .[0].last_run.exit_status == 4
        and .[0].last_success.exit_status == 0'
    # The table's columns: InspectCommands.ListLastRunsAddsTwoColumnsBeforeTheCommandAndTwoJsonFields.
    # Without the option, list is as before: no extra fields, no extra round trips.
    run -0 "$RL" list --json
    echo "$output" | jq -e '.[0] | has("last_run") | not'
    run -64 "$RL" status --last-runs job
    run -64 "$RL" --last-runs job true
    stop_holder
}

@test "list --last-runs also shows free locks with a ledger, marked free, so a quiet job shows" {
    "$RL" quiet true
    "$RL" quiet sh -c 'exit 5' || true
    hold busy
    run -0 "$RL" list --last-runs --json
    echo "$output" | jq -e 'length == 2 and .[0].name == "busy" and .[0].held
        and .[1].name == "quiet" and (.[1].held | not) and .[1].token == null
        and .[1].last_run.exit_status == 5 and .[1].last_success.exit_status == 0'
    run -0 "$RL" list --last-runs
    assert_line --index 2 --regexp "^quiet +- +[0-9]+ +free +- +.*ran, exit 5 .*ran, exit 0"
    # Without --last-runs, list shows held locks only, as before.
    run -0 "$RL" list --json
    echo "$output" | jq -e 'length == 1 and .[0].name == "busy"'
    stop_holder
}

@test "a ledger that cannot be written is a warning and changes neither start nor exit status" {
    cli "$REDIS_PORT" SET '{job}:ledger' not-a-list
    run -3 --separate-stderr "$RL" job sh -c 'exit 3'
    [[ "$stderr" == *"could not record the run of lock 'job' in its ledger"* ]]
    run -0 "$RL" job true
}

# Commands of redlock-run's own connection (by its address, from its first EVALSHA) in a MONITOR
# log, before and after the line where the command announced its start with an ECHO.
client_commands() {  # LOG before|after
    local addr
    addr=$(grep -m1 '"EVALSHA"' "$1" | sed -E 's/^[^[]*\[[0-9]+ ([^]]+)\].*/\1/')
    [ -n "$addr" ]
    awk -v a="[0 $addr]" -v side="$2" '
        /"ECHO" "command-started"/ { seen = 1; next }
        index($0, a) && ((side == "before") == !seen) { n++ }
        END { print n + 0 }' "$1"
}

@test "with --once-per and the ledger: one round trip before the command, one after it" {
    # Loads the scripts first: a first EVALSHA misses and is sent again as EVAL.
    "$RL" --once-per 1h warm-up true
    cli "$REDIS_PORT" MONITOR > "$BATS_TEST_TMPDIR/monitor" &
    local mon=$!
    # The monitor is attached once it has seen a command sent after it.
    wait_for 5 sh -c "redis-cli -p $REDIS_PORT PING >/dev/null && grep -q PING '$BATS_TEST_TMPDIR/monitor'"
    run -0 "$RL" --once-per 1h job sh -c \
        "redis-cli -h 127.0.0.1 -p $REDIS_PORT ECHO command-started >/dev/null"
    # The same slot again: skipped, in the acquire's one round trip.
    run -75 "$RL" --once-per 1h job sh -c "echo must-not-run"
    [[ "$output" == *"was already done"* ]]
    wait_for 5 file_contains "$BATS_TEST_TMPDIR/monitor" '"HGETALL" "{job}:once"'
    kill "$mon"
    wait "$mon" 2>/dev/null || true
    local log="$BATS_TEST_TMPDIR/monitor"
    # Before the command: the acquire alone, which reads the slot record itself.
    [ "$(client_commands "$log" before)" -eq 1 ]
    # After it: one script that writes the entry, marks the slot and deletes the lock.
    [ "$(client_commands "$log" after)" -eq 1 ]
    # And the skipped run (its own connection) sent its acquire alone: three commands in all
    # besides the command's ECHO and the PINGs of wait_for.
    [ "$(grep -v '\[0 lua\]' "$log" | grep -vc '"ECHO"\|"PING"\|^OK$')" -eq 3 ]
    [ "$(grep -c '"EVALSHA"' "$log")" -eq 3 ]
    local ran_end
    ran_end=$(grep -n '"EVALSHA"' "$log" | sed -n 2p | cut -d: -f1)
    [ "$(grep -n '"LPUSH" "{job}:ledger"' "$log" | cut -d: -f1)" -gt "$ran_end" ]
    [ "$(grep -n '"DEL" "job"' "$log" | cut -d: -f1)" -gt "$ran_end" ]
    [ "$(grep -n '"HSET" "{job}:once"' "$log" | cut -d: -f1)" -gt "$ran_end" ]
    [ "$(grep -c 'must-not-run' "$log")" -eq 0 ]
}

# A permit and a shared hold live in keys of their own: their protocol's script gives the hold
# back and records the run in one call (the 'finish' operation of permits.lua and shared.lua),
# judging it by the run's own permit or hold, so the run is 'ran' with its exit status and fence,
# in the ledger and in the run's own metrics.
@test "with --permits 2 and with --shared: one round trip after the command, recorded as ran" {
    # Loads the scripts first: a first EVALSHA misses and is sent again as EVAL.
    "$RL" --permits 2 warm-up-p true
    "$RL" --shared warm-up-s true
    local mode name log mon fence
    for mode in permits shared; do
        name="job-$mode" log="$BATS_TEST_TMPDIR/monitor-$mode"
        cli "$REDIS_PORT" MONITOR > "$log" &
        mon=$!
        # The monitor is attached once it has seen a command sent after it.
        wait_for 5 sh -c "redis-cli -p $REDIS_PORT PING >/dev/null && grep -q PING '$log'"
        if [ "$mode" = permits ]; then set -- --permits 2; else set -- --shared; fi
        run -3 "$RL" "$@" --metrics-file "$BATS_TEST_TMPDIR/$mode.prom" "$name" sh -c \
            "redis-cli -h 127.0.0.1 -p $REDIS_PORT ECHO command-started >/dev/null; exit 3"
        wait_for 5 file_contains "$log" "\"LPUSH\" \"{$name}:ledger\""
        kill "$mon"
        wait "$mon" 2>/dev/null || true
        # Before the command: the acquire alone. After it: one script that gives the hold back
        # and records the run.
        [ "$(client_commands "$log" before)" -eq 1 ]
        [ "$(client_commands "$log" after)" -eq 1 ]
        local ran_end
        ran_end=$(grep -n '"EVALSHA"' "$log" | sed -n 2p | cut -d: -f1)
        [ "$(grep -n "\"LPUSH\" \"{$name}:ledger\"" "$log" | cut -d: -f1)" -gt "$ran_end" ]
        # The hold is gone, with the lock key (its last holder left).
        [ "$(cli "$REDIS_PORT" EXISTS "$name")" = 0 ]
        run -0 "$RL" history --json "$name"
        [ "${#lines[@]}" -eq 1 ]
        echo "${lines[0]}" | jq -e '.outcome == "ran" and .exit_status == 3 and .fence > 0'
        # The run itself takes the script's answer as "still held", not as a lost lock.
        grep -q "outcomes_total{lock=\"$name\",outcome=\"ran\"} 1" "$BATS_TEST_TMPDIR/$mode.prom"
    done
}

@test "quorum: history merges the nodes' copies, each run once" {
    load quorum_helpers
    quorum_start 3
    # A run counts where a majority of all nodes hold its copy: both runs must reach every node
    # (the 2s node timeout and --wait ride out a loaded machine, two suites at once included).
    export REDLOCK_URL=$QUORUM_URL REDLOCK_NODE_TIMEOUT=2s
    run -0 "$RL" --wait 120s job true
    run -2 "$RL" --wait 120s job sh -c 'exit 2'
    # stderr apart: a node slow to answer on a loaded machine is named there, not counted.
    run -0 --separate-stderr "$RL" history --json job
    [ "${#lines[@]}" -eq 2 ]
    run -1 --separate-stderr "$RL" status --json job
    echo "$output" | jq -e '.last_run.exit_status == 2 and .last_success.exit_status == 0'
    # A node still answering the acquire when the short command ends is not waited for, and its
    # copy dies with the process (quorum.cpp: a lagging node is not waited for), so on a loaded
    # machine one node may miss a run. Stop the node with the fewest copies: each run then still
    # has a copy on both nodes left, a majority of all three.
    local i fewest=0 n least=3
    for i in 0 1 2; do
        n=$(cli "${Q_PORT[i]}" LLEN '{job}:ledger')
        if [ "$n" -lt "$least" ]; then least=$n fewest=$i; fi
    done
    q_down "$fewest"
    run -0 --separate-stderr "$RL" history --json job
    [ "${#lines[@]}" -eq 2 ]
    run -1 --separate-stderr "$RL" status job
    assert_output --regexp "last run: .*ran, exit 2"
    assert_output --regexp "last ok: .*ran, exit 0"
}

@test "quorum: list --last-runs shows each lock's newest run among the nodes' copies" {
    load quorum_helpers
    quorum_start 3
    export REDLOCK_URL=$QUORUM_URL REDLOCK_NODE_TIMEOUT=200ms
    "$RL" job true
    "$RL" job sh -c 'exit 4' || true
    hold job
    # stderr apart, and 2 or 3 holding: a node slow to answer on a loaded machine is named there.
    run -0 --separate-stderr "$RL" list --last-runs --json
    echo "$output" | jq -e '.[0].name == "job" and .[0].holding >= 2
        and .[0].lock.last_run.exit_status == 4 and .[0].lock.last_success.exit_status == 0'
    run -0 --separate-stderr "$RL" list --last-runs
    assert_line --index 0 --regexp "^NAME +NODES +TTL .*LAST RUN +LAST OK +COMMAND"
    assert_line --index 1 --regexp "^job +[23] of 3 .*ran, exit 4 .*ran, exit 0"
}

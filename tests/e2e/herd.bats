#!/usr/bin/env bats
# The top of the minute (issue 21): a herd of runs started at once on one lock, and a server at
# its maxclients. One redis-server for the file (setup_file); each test uses its own lock names.
load helpers
bats_require_minimum_version 1.5.0

setup_file() {
    redis_start
    export REDIS_PORT REDIS_PID REDIS_DIR REDIS_URL REDLOCK_URL
}
teardown_file() { redis_stop; }

teardown() {
    touch "$BATS_TEST_TMPDIR/go"
    if [ -n "${CLI_PID:-}" ]; then
        kill "$CLI_PID" 2>/dev/null || true
        wait "$CLI_PID" 2>/dev/null || true
    fi
    cli "$REDIS_PORT" CONFIG SET maxclients 10000 >/dev/null 2>&1 || true
    rl_cleanup
}

lines_at_least() { [ "$(wc -l < "$1")" -ge "$2" ]; }

# Each contender polls for the gate and then runs, so all of them meet Redis within a few
# milliseconds. The one that gets the lock holds it until every other run has exited (its own
# exit code is the only one missing from the codes file), so that none can find it free. The
# timeouts are generous so that a loaded machine (sanitizers) cannot turn busy into 69.
@test "a herd of runs without --wait: exactly one runs its command, every other exits 75, none 69" {
    local d=$BATS_TEST_TMPDIR n=60 i
    : > "$d/codes"
    cat > "$d/contender" <<'SH'
# contender DIR RL OTHERS: waits for the gate, runs, appends its exit code to DIR/codes.
while [ ! -e "$1/go" ]; do sleep 0.01; done
"$2" --command-timeout 20s --connect-timeout 20s herd -- sh -c '
    echo start >> "$0/log"
    while [ "$(wc -l < "$0/codes")" -lt "$1" ]; do sleep 0.02; done' "$1" "$3" 2>> "$1/err"
echo $? >> "$1/codes"
SH
    local pids=()
    for i in $(seq "$n"); do
        sh "$d/contender" "$d" "$RL" "$((n - 1))" &
        pids+=($!)
    done
    touch "$d/go"
    wait_for 120 lines_at_least "$d/codes" "$n"
    wait "${pids[@]}"
    [ "$(grep -c start "$d/log")" = 1 ]
    [ "$(grep -cx 0 "$d/codes")" = 1 ]
    [ "$(grep -cx 75 "$d/codes")" = $((n - 1)) ]
    # Every busy run named the holder: the early busy reply carries its info.
    [ "$(grep -c "^redlock-run: lock 'herd' is held by .* pid [0-9]" "$d/err")" = $((n - 1)) ]
    key_absent herd
}

# A server at its maxclients answers a new connection with an error and closes it: Redis cannot
# serve the run now, which is 69 (not 70, a fault of the program), and nothing is left behind.
# A waiting run rides it out and runs once a connection is free.
@test "a server at maxclients is Redis unavailable (69) at once without --wait; a waiter rides it out" {
    local d=$BATS_TEST_TMPDIR
    mkfifo "$d/cli.in"
    cli "$REDIS_PORT" < "$d/cli.in" > "$d/cli.out" &
    CLI_PID=$!
    exec 5> "$d/cli.in"
    echo "CONFIG SET maxclients 1" >&5
    wait_for 5 file_contains "$d/cli.out" OK
    run "$RL" full -- touch "$d/ran"
    [ "$status" -eq 69 ]
    [ "${#lines[@]}" -eq 1 ]
    [[ "${lines[0]}" == "redlock-run: "*"max number of clients reached"* ]]
    [ ! -e "$d/ran" ]
    rl_start -v --wait 30s full -- touch "$d/ran"
    # Refused at least once, and still waiting.
    wait_for 10 file_contains "$RL_ERR" "max number of clients reached"
    kill -0 "$RL_PID"
    echo "CONFIG SET maxclients 10000" >&5
    exec 5>&-
    wait "$CLI_PID"
    CLI_PID=
    rl_finish 30
    [ "$RL_STATUS" -eq 0 ]
    [ -e "$d/ran" ]
    key_absent full
}

# The cron fleet's busy attempts (-q, no --wait) print nothing about the holder, so they do not
# make Redis read and send its info (issue 21: half the Redis CPU of a busy attempt); a run that
# names the holder still gets it. Seen from Redis: the calls the acquire script makes (MONITOR).
@test "a quiet busy run without --wait makes Redis read no holder info; a run that names the holder does" {
    local d=$BATS_TEST_TMPDIR
    hold_until quietherd "$d/go"
    cli "$REDIS_PORT" MONITOR > "$d/monitor" 2>/dev/null &
    CLI_PID=$!
    wait_for 5 file_contains "$d/monitor" OK
    run -75 "$RL" -q quietherd -- touch "$d/ran"
    [ -z "$output" ]
    cli "$REDIS_PORT" ECHO quiet-done >/dev/null
    run -75 "$RL" quietherd -- touch "$d/ran"
    [[ "$output" == "redlock-run: lock 'quietherd' is held by "*" pid $HOLDER "* ]]
    cli "$REDIS_PORT" ECHO loud-done >/dev/null
    wait_for 5 file_contains "$d/monitor" loud-done
    [ ! -e "$d/ran" ]
    sed -n '/"OK"\|^OK/,/quiet-done/p' "$d/monitor" > "$d/quiet"
    sed -n '/quiet-done/,/loud-done/p' "$d/monitor" > "$d/loud"
    # One acquire each; only the loud one's script read the holder's hash and the clock.
    [ "$(grep -c '"EVALSHA"' "$d/quiet")" -eq 1 ]
    [ "$(grep -c '"EVALSHA"' "$d/loud")" -eq 1 ]
    [ "$(grep -c '"HGETALL"\|"TIME"' "$d/quiet")" -eq 0 ]
    grep -q '\[0 lua\] "HGETALL" "{quietherd}:info"' "$d/loud"
    touch "$d/go"
    wait "$HOLDER"
}

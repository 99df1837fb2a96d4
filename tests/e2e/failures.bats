#!/usr/bin/env bats
# When things go wrong: a lock lost or stolen while the command runs, a server that forgot its
# scripts, keys that are not locks, a server out of reach. Each ends in its documented code.
# Malformed invocations need no server: they are rows of tests/unit/cli/refusals_test.cpp.
load helpers
bats_require_minimum_version 1.5.0

setup() { redis_start; }
teardown() {
    rl_cleanup "$BATS_TEST_TMPDIR/cpid"
    redis_stop
}

# A command that notes SIGTERM in the file "termed" (and then exits 0), notes "ready" once
# running, and otherwise runs until the file "go" appears, then notes "finished".
# The runs below renew every 100ms, so a fault is found within about that; their 3s leases only
# keep a loaded machine's late renewal from ending a lease before the fault is injected.
TRAPPING="echo \$\$ > \"\$0/cpid\"
    trap 'echo term > \"\$0/termed\"; exit 0' TERM
    touch \"\$0/ready\"
    while [ ! -e \"\$0/go\" ]; do sleep 0.02; done
    touch \"\$0/finished\""

@test "a lock deleted from outside terminates the command and exits 76" {
    local d=$BATS_TEST_TMPDIR
    rl_start -t 3s --renew-every 100ms deleted -- sh -c "$TRAPPING" "$d"
    wait_for 5 file_exists "$d/ready"
    cli "$REDIS_PORT" DEL deleted >/dev/null
    rl_finish 5
    assert_equal "$RL_STATUS" 76
    assert_equal "$(cat "$d/termed")" term
    [ ! -e "$d/finished" ]
    run cat "$RL_ERR"
    assert_output --regexp "^redlock-run: lock 'deleted' lost: the key no longer holds this run's token; sending SIGTERM"
}

@test "a lock replaced by another token is never deleted by the release, and counts as lost" {
    run "$RL" replaced -- sh -c 'redis-cli -p "$REDIS_PORT" SET replaced other >/dev/null'
    assert_equal "$status" 76
    assert_output --partial "lock 'replaced' was taken over by another holder while the command ran; left it alone"
    assert_equal "$(cli "$REDIS_PORT" GET replaced)" other
}

@test "a lock that vanished before the renewer noticed is reported as lost at release" {
    run "$RL" vanished -- sh -c 'redis-cli -p "$REDIS_PORT" DEL vanished >/dev/null'
    assert_equal "$status" 76
    assert_output --partial "lock 'vanished' was gone at release"
}

@test "a lock replaced while renewing ends the command with 76 and stays replaced" {
    local d=$BATS_TEST_TMPDIR
    rl_start -t 3s --renew-every 100ms stolen -- sh -c "$TRAPPING" "$d"
    wait_for 5 file_exists "$d/ready"
    cli "$REDIS_PORT" SET stolen other PX 10000 >/dev/null
    rl_finish 5
    assert_equal "$RL_STATUS" 76
    assert_equal "$(cat "$d/termed")" term
    assert_equal "$(cli "$REDIS_PORT" GET stolen)" other
}

@test "a lock that expired while the command ran exits 76 even if the command succeeded" {
    # The command itself waits for the loss to be noticed, then exits 0.
    local d=$BATS_TEST_TMPDIR
    rl_start -t 3s --renew-every 100ms --on-lost ignore expired -- sh -c "$TRAPPING" "$d"
    wait_for 5 file_exists "$d/ready"
    cli "$REDIS_PORT" PEXPIRE expired 1 >/dev/null
    wait_for 5 file_contains "$RL_ERR" "lost"
    touch "$d/go"
    rl_finish 5
    assert_equal "$RL_STATUS" 76
    key_absent expired
}

@test "SCRIPT FLUSH while holding: scripts are resent, the command completes and the lock is released" {
    run "$RL" -v -t 3s --renew-every 100ms flushed -- sh -c '
        redis-cli -p "$REDIS_PORT" SCRIPT FLUSH >/dev/null
        sleep 0.35'
    assert_success
    refute_output --partial "not cached"  # an internal step, not shown even with -v
    assert_line --regexp "^redlock-run: renewed lock 'flushed' in "
    assert_line --regexp "^redlock-run: released lock 'flushed' in "
    key_absent flushed
}

@test "connections killed while holding are re-established and the lock kept" {
    run "$RL" -v -t 3s --renew-every 100ms reconnect -- sh -c '
        redis-cli -p "$REDIS_PORT" CLIENT KILL TYPE normal >/dev/null
        sleep 0.35
        [ "$(redis-cli -p "$REDIS_PORT" GET reconnect)" = "$REDLOCK_TOKEN" ]'
    assert_success
    assert_line --regexp "^redlock-run: renewing lock 'reconnect' failed, retrying in "
    assert_line --regexp "^redlock-run: released lock 'reconnect' in "
    key_absent reconnect
}

@test "a fresh server without the scripts cached works on the first run" {
    cli "$REDIS_PORT" SCRIPT FLUSH >/dev/null
    run "$RL" fresh -- true
    assert_success
    key_absent fresh
}

@test "a lock key holding a hash is a clear one-line error, exit 65, key untouched" {
    cli "$REDIS_PORT" HSET hashed field value >/dev/null
    run -65 "$RL" hashed -- touch "$BATS_TEST_TMPDIR/ran"
    assert_equal "${#lines[@]}" 1
    assert_output --regexp "^redlock-run: .*'hashed'.*hash"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    assert_equal "$(cli "$REDIS_PORT" HGET hashed field)" value
}

@test "a lock key holding a list is exit 65 and the list is untouched" {
    cli "$REDIS_PORT" RPUSH listed a b >/dev/null
    run -65 "$RL" listed -- true
    assert_output --partial list
    assert_equal "$(cli "$REDIS_PORT" LLEN listed)" 2
}

@test "a fence counter that is not a number is exit 65 and no lock is left behind" {
    cli "$REDIS_PORT" SET '{badfence}:fence' abc >/dev/null
    run -65 "$RL" badfence -- touch "$BATS_TEST_TMPDIR/ran"
    assert_output --partial fence
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    key_absent badfence
    assert_equal "$(cli "$REDIS_PORT" GET '{badfence}:fence')" abc
    cli "$REDIS_PORT" DEL '{badfence}:fence' >/dev/null
    cli "$REDIS_PORT" HSET '{badfence}:fence' a b >/dev/null
    run -65 "$RL" badfence -- true
    key_absent badfence
}

@test "an unreachable port exits 69 quickly" {
    local port start
    port=$(free_port)
    start=$SECONDS
    run -69 "$RL" -u "redis://127.0.0.1:$port" job -- touch "$BATS_TEST_TMPDIR/ran"
    [ $((SECONDS - start)) -le 2 ]
    assert_output --regexp "^redlock-run: .*127\.0\.0\.1:$port"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "a missing unix socket exits 69" {
    run -69 "$RL" -u "unix://$BATS_TEST_TMPDIR/nothing.sock" job -- true
    assert_output --partial nothing.sock
}

@test "a Redis stopped before acquiring makes redlock-run exit 69 within the command timeout" {
    kill -STOP "$REDIS_PID"
    local start=$SECONDS
    # Any other bound on the wait is 60s (the environment's command timeout, which the option
    # overrides) or 120s (timeout): ending well before either is ending by --command-timeout,
    # however loaded the machine, where a 2s bound (the default) left about a second of room.
    REDLOCK_COMMAND_TIMEOUT=60s run -69 timeout 120 "$RL" --command-timeout 300ms stalled -- \
        touch "$BATS_TEST_TMPDIR/ran"
    kill -CONT "$REDIS_PID"
    [ $((SECONDS - start)) -lt 30 ]
    assert_output --partial 'timed out'
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "a release that cannot reach Redis is reported and the command's status still returned" {
    # The command freezes Redis itself on its way out; the lock then expires by its ttl.
    run "$RL" --command-timeout 200ms -t 2s unreleased -- sh -c 'kill -STOP "$REDIS_PID"; exit 3'
    kill -CONT "$REDIS_PID"
    assert_equal "$status" 3
    assert_line --regexp "^redlock-run: could not release lock 'unreleased' .*expires by itself"
}

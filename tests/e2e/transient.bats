#!/usr/bin/env bats
# Server trouble while the lock is held: READONLY (demoted to a replica), MASTERDOWN, LOADING, CLIENT
# PAUSE and DEBUG SLEEP are transient until the local lease deadline, and only that deadline or a
# "token gone" answer means lost. Also: no renewal reaches Redis after the release, and the
# maxmemory-policy warning.
load helpers
load failure_helpers
bats_require_minimum_version 1.5.0

setup() { redis_start --enable-debug-command yes; }
teardown() {
    touch "$BATS_TEST_TMPDIR/go"
    cli "$REDIS_PORT" CLIENT UNPAUSE >/dev/null 2>&1 || true
    rl_cleanup
    monitor_stop
    redis_stop
}

# A command that runs until the file "go" appears, notes "termed" on SIGTERM (then exits 0).
GATED='trap "touch \"$0/termed\"; exit 0" TERM; touch "$0/ready"; g=$0/go; '"$AWAIT"

# Lines of redlock-run's stderr after the first one matching $1.
stderr_after() { sed -n "/$1/,\$p" "$RL_ERR"; }
renewed_after() { stderr_after "$1" | grep -q "renewed lock"; }

@test "READONLY renewals while demoted to a replica for less than the ttl: retried, the lock kept" {
    local d=$BATS_TEST_TMPDIR
    rl_start -v -t 10s --renew-every 200ms demoted -- bash -c "$GATED" "$d"
    wait_for 5 file_exists "$d/ready"
    local token
    token=$(cli "$REDIS_PORT" GET demoted)
    cli "$REDIS_PORT" REPLICAOF 127.0.0.1 "$(free_port)" >/dev/null
    wait_for 5 file_contains "$RL_ERR" "renewing lock 'demoted' failed, retrying in .*READONLY"
    cli "$REDIS_PORT" REPLICAOF NO ONE >/dev/null
    wait_for 20 renewed_after READONLY
    [ "$(cli "$REDIS_PORT" GET demoted)" = "$token" ]
    touch "$d/go"
    rl_finish 10
    assert_equal "$RL_STATUS" 0
    [ ! -e "$d/termed" ]
    key_absent demoted
}

@test "MASTERDOWN renewals (a replica that will not serve stale data): retried, the lock kept" {
    local d=$BATS_TEST_TMPDIR
    cli "$REDIS_PORT" CONFIG SET replica-serve-stale-data no >/dev/null
    rl_start -v -t 10s --renew-every 200ms stale -- bash -c "$GATED" "$d"
    wait_for 5 file_exists "$d/ready"
    cli "$REDIS_PORT" REPLICAOF 127.0.0.1 "$(free_port)" >/dev/null
    wait_for 5 file_contains "$RL_ERR" "renewing lock 'stale' failed, retrying in .*MASTERDOWN"
    cli "$REDIS_PORT" REPLICAOF NO ONE >/dev/null
    wait_for 20 renewed_after MASTERDOWN
    touch "$d/go"
    rl_finish 10
    assert_equal "$RL_STATUS" 0
    [ ! -e "$d/termed" ]
    key_absent stale
}

@test "LOADING renewals while a restarted server reads its data: retried, the lock kept" {
    redis_stop
    # Snapshot on shutdown, and load it slowly (200us a key) while answering LOADING.
    redis_start --save "3600 1" --key-load-delay 200 --loading-process-events-interval-bytes 1024
    cli "$REDIS_PORT" EVAL "for i = 1, 5000 do redis.call('SET', 'filler' .. i, string.rep('x', 100)) end" 0 \
        >/dev/null
    local d=$BATS_TEST_TMPDIR
    rl_start -v -t 30s --renew-every 200ms loading -- bash -c "$GATED" "$d"
    wait_for 5 file_exists "$d/ready"
    local token
    token=$(cli "$REDIS_PORT" GET loading)
    redis_restart
    # Bounds far above what the restart and the load take: on a loaded machine (a sanitizer
    # build, tests in parallel) they took longer than the old 6s lease, and the lock was lost.
    wait_for 30 file_contains "$RL_ERR" "renewing lock 'loading' failed, retrying in .*LOADING"
    wait_for 30 renewed_after LOADING
    [ "$(cli "$REDIS_PORT" GET loading)" = "$token" ]
    touch "$d/go"
    rl_finish 10
    assert_equal "$RL_STATUS" 0
    [ ! -e "$d/termed" ]
    key_absent loading
}

@test "a demotion that outlasts the lease stops the command at the local deadline, exit 76" {
    local d=$BATS_TEST_TMPDIR
    rl_start -v -t 2s --renew-every 200ms gone-replica -- bash -c "$GATED" "$d"
    wait_for 5 file_exists "$d/ready"
    cli "$REDIS_PORT" REPLICAOF 127.0.0.1 "$(free_port)" >/dev/null
    wait_for 5 file_exists "$d/termed"
    rl_finish 10
    assert_equal "$RL_STATUS" 76
    run cat "$RL_ERR"
    assert_output --partial "lock 'gone-replica' lost: no renewal succeeded in time"
    # Several retries, jittered, before the deadline: not one try and a give-up.
    [ "$(grep -c "renewing lock 'gone-replica' failed" "$RL_ERR")" -ge 3 ]
}

@test "CLIENT PAUSE shorter than the ttl: the renewal waits it out and the lock is kept" {
    local d=$BATS_TEST_TMPDIR
    rl_start -v -t 10s --renew-every 200ms paused -- bash -c "$GATED" "$d"
    wait_for 5 file_exists "$d/ready"
    cli "$REDIS_PORT" CLIENT PAUSE 800 ALL >/dev/null
    # A renewal sent during the pause is answered only after it: it took hundreds of ms.
    wait_for 5 file_matches "$RL_ERR" "renewed lock 'paused' in ([3-9][0-9][0-9]ms|[0-9]+s)"
    touch "$d/go"
    rl_finish 10
    assert_equal "$RL_STATUS" 0
    [ ! -e "$d/termed" ]
    key_absent paused
}

@test "CLIENT PAUSE longer than the ttl: the command is stopped before Redis answers again, exit 76" {
    local d=$BATS_TEST_TMPDIR
    rl_start -v -t 1s --renew-every 100ms --command-timeout 500ms long-pause -- bash -c "$GATED" "$d"
    wait_for 5 file_exists "$d/ready"
    # Taken before the pause is asked for, so that the pause ends 6s after this moment or later.
    local paused
    paused=$(now_ms)
    cli "$REDIS_PORT" CLIENT PAUSE 6000 ALL >/dev/null
    wait_for 10 file_exists "$d/termed"
    local stopped=$(($(now_ms) - paused))
    echo "# command stopped ${stopped}ms into a 6s pause (ttl 1s)" >&3
    # Stopped by the local lease, while Redis was still paused.
    [ "$stopped" -lt 6000 ]
    rl_finish 10
    assert_equal "$RL_STATUS" 76
    run cat "$RL_ERR"
    assert_output --partial "lock 'long-pause' lost: no renewal succeeded in time"
}

@test "DEBUG SLEEP shorter than the ttl: the lock is kept" {
    local d=$BATS_TEST_TMPDIR
    rl_start -v -t 10s --renew-every 200ms sleepy -- bash -c "$GATED" "$d"
    wait_for 5 file_exists "$d/ready"
    cli "$REDIS_PORT" DEBUG SLEEP 0.8 >/dev/null
    wait_for 5 file_matches "$RL_ERR" "renewed lock 'sleepy' in ([3-9][0-9][0-9]ms|[0-9]+s)"
    touch "$d/go"
    rl_finish 10
    assert_equal "$RL_STATUS" 0
    [ ! -e "$d/termed" ]
    key_absent sleepy
}

@test "DEBUG SLEEP longer than the ttl: the command is stopped at the local deadline, exit 76" {
    local d=$BATS_TEST_TMPDIR
    rl_start -v -t 1s --renew-every 100ms --command-timeout 500ms asleep -- bash -c "$GATED" "$d"
    wait_for 5 file_exists "$d/ready"
    cli "$REDIS_PORT" DEBUG SLEEP 5 >/dev/null &
    local sleeper=$! slept
    slept=$(now_ms)
    wait_for 10 file_exists "$d/termed"
    local stopped=$(($(now_ms) - slept))
    echo "# command stopped ${stopped}ms into a 5s DEBUG SLEEP (ttl 1s)" >&3
    [ "$stopped" -lt 5000 ]
    rl_finish 10
    wait "$sleeper"
    assert_equal "$RL_STATUS" 76
    run cat "$RL_ERR"
    assert_output --partial "lock 'asleep' lost: no renewal succeeded in time"
}

@test "no renewal reaches Redis after the release script (MONITOR), over many short runs" {
    local renew release i
    # A script goes as EVALSHA, or as EVAL with its body after a connection was cut (the cache is
    # then taken as emptied: Connection::close), which a loaded machine's slow renewal can cause.
    renew="(\"EVALSHA\" \"$(script_sha renew)\"|\"EVAL\" \".*Extends the lock only while)"
    # A run releases with the ledger script (on by default).
    release="(\"EVALSHA\" \"$(script_sha ledger)\"|\"EVAL\" \".*Records a finished run and)"
    "$RL" -t 1s --renew-every 20ms warm -- true # cache the scripts: EVALSHA lines only
    monitor_start
    for i in $(seq 1 15); do
        "$RL" -t 1s --renew-every 20ms brief -- sh -c 'echo "$REDLOCK_TOKEN" >> "$0"; sleep 0.1' \
            "$BATS_TEST_TMPDIR/tokens"
    done
    # Each run has exited, so all it sent is in Redis's feed, which is in order: once a later
    # command shows in the log, theirs are there too.
    cli "$REDIS_PORT" ECHO runs-done >/dev/null
    wait_for 5 file_contains "$MONITOR_OUT" runs-done
    monitor_stop
    local token renewals late at
    for token in $(cat "$BATS_TEST_TMPDIR/tokens"); do
        # Renewals did run while the command ran, else this test would prove nothing...
        renewals=$(grep -E "$renew" "$MONITOR_OUT" | grep -c "\"$token\"" || true)
        [ "$renewals" -ge 1 ]
        # ...and none of them, nor any PEXPIRE, came after this run's release.
        at=$(grep -nE "$release.*\"$token\"" "$MONITOR_OUT" | head -1 | cut -d: -f1)
        [ -n "$at" ]
        late=$(tail -n +"$at" "$MONITOR_OUT" | grep -E "$renew.*\"$token\"" || true)
        [ -z "$late" ]
    done
    [ "$(wc -l < "$BATS_TEST_TMPDIR/tokens")" = 15 ]
    # No PEXPIRE of the key after the last release at all (the only writer of brief is us).
    local last
    last=$(grep -nE "$release" "$MONITOR_OUT" | tail -1 | cut -d: -f1)
    [ -z "$(tail -n +"$last" "$MONITOR_OUT" | grep '"PEXPIRE" "brief"')" ]
}

@test "an evicting maxmemory-policy is warned about with -v and by status, never in --json output" {
    cli "$REDIS_PORT" CONFIG SET maxmemory-policy allkeys-lru >/dev/null
    run --separate-stderr "$RL" -v evict -- true
    assert_success
    [[ "$stderr" == *"maxmemory-policy allkeys-lru: under memory pressure it may evict a lock key"* ]]
    # Once per run.
    [ "$(grep -c maxmemory-policy <<<"$stderr")" = 1 ]
    run --separate-stderr "$RL" evict -- true
    assert_success
    [ -z "$stderr" ]
    run --separate-stderr "$RL" status evict
    assert_equal "$status" 1
    [[ "$stderr" == *"maxmemory-policy allkeys-lru"* ]]
    run --separate-stderr "$RL" status --json evict
    assert_equal "$status" 1
    [[ "$stderr" == *"maxmemory-policy allkeys-lru"* ]]
    /usr/bin/python3 -c 'import json,sys; json.loads(sys.argv[1])' "$output"
    cli "$REDIS_PORT" CONFIG SET maxmemory-policy noeviction >/dev/null
    run --separate-stderr "$RL" -v evict -- true
    [[ "$stderr" != *maxmemory-policy* ]]
    run --separate-stderr "$RL" status evict
    [ -z "$stderr" ]
}

@test "a server with CONFIG disabled (managed Redis) is not warned about, and works" {
    redis_stop
    redis_start --rename-command CONFIG ""
    run --separate-stderr "$RL" -v noconfig -- true
    assert_success
    [[ "$stderr" != *maxmemory* ]]
    [[ "$stderr" != *CONFIG* ]]
    run --separate-stderr "$RL" status noconfig
    assert_equal "$status" 1
    [ -z "$stderr" ]
}

@test "a waiter whose connection is killed while blocked keeps waiting, keeps its place, and runs" {
    local d=$BATS_TEST_TMPDIR
    hold_until killed "$d/go"
    "$RL" --wait 30s killed -- true 3>&- &
    local first=$!
    wait_for 5 queue_length_is killed 1
    rl_start -v --wait 30s killed -- touch "$d/ran"
    wait_for 5 queue_length_is killed 2
    local second_token
    second_token=$(cli "$REDIS_PORT" LINDEX '{killed}:wait' 1)
    # Every client but redis-cli's own: both waiters' BLPOPs and the holder's connection.
    cli "$REDIS_PORT" CLIENT KILL TYPE normal >/dev/null
    wait_for 5 file_contains "$RL_ERR" "waiting for lock 'killed' was interrupted"
    # Blocked again, still second in line.
    wait_for 5 blocked_is 2
    assert_equal "$(cli "$REDIS_PORT" LINDEX '{killed}:wait' 1)" "$second_token"
    touch "$d/go"
    wait "$HOLDER"
    wait "$first"
    rl_finish 10
    assert_equal "$RL_STATUS" 0
    [ -e "$d/ran" ]
}

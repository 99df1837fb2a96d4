#!/usr/bin/env bats
# redis-sentinel:// URLs against one master, one replica and three real redis-sentinels on
# loopback: the master is found through the sentinels, followed across a SENTINEL FAILOVER, and a
# lock the new master does not have is reported lost, never taken again silently.

load helpers
load sentinel_helpers

setup() {
    sentinel_setup
    long_job
}

teardown() {
    rl_cleanup
    nodes_stop_all
}

# A command that says it started, runs until the file "stop" exists in the test's temp dir, and
# notes a SIGTERM.
long_job() {
    LONG_JOB=(sh -c 'touch "$0/started"; trap "touch \"\$0/termed\"; exit 143" TERM
                     while [ ! -e "$0/stop" ]; do sleep 0.05; done' "$BATS_TEST_TMPDIR")
}

pttl_above() { [ "$(ncli "$1" PTTL "$2")" -gt "$3" ]; }

# Promotes the replica with a SENTINEL FAILOVER asked of the first sentinel, and waits until that
# sentinel names it.
fail_over_to_replica() {
    wait_for 20 sentinel_sees_replica "$S1_PORT"
    run ncli "$S1_PORT" SENTINEL FAILOVER "$MASTER_NAME"
    assert_output OK
    wait_for 20 sentinel_points_to "$S1_PORT" "$REPLICA_PORT"
}

@test "a run through the sentinels takes the lock on the master and releases it" {
    run "$RL" -u "$SENTINEL_URL" job -- sh -c "redis-cli -p $MASTER_PORT GET job"
    assert_success
    assert_output --regexp '^[0-9a-f]{32}$'
    [ "$(ncli "$MASTER_PORT" EXISTS job)" = 0 ]
}

@test "a database number after the master name selects that database on the master" {
    run "$RL" -u "$SENTINEL_URL/3" job -- sh -c "redis-cli -p $MASTER_PORT -n 3 GET job"
    assert_success
    assert_output --regexp '^[0-9a-f]{32}$'
}

@test "a nested run for the same lock through the same sentinel URL runs directly" {
    run "$RL" -u "$SENTINEL_URL" job -- "$RL" -v -u "$SENTINEL_URL" job -- echo inner
    assert_success
    assert_output --partial "is held by a parent redlock-run (token verified)"
    assert_line inner
}

@test "an unreachable sentinel is skipped for the next one" {
    local dead
    dead=$(free_port)
    run "$RL" -v -u "redis-sentinel://127.0.0.1:$dead,127.0.0.1:$S2_PORT/$MASTER_NAME" job -- true
    assert_success
    assert_output --partial "sentinel 127.0.0.1:$S2_PORT says master '$MASTER_NAME' is at 127.0.0.1:$MASTER_PORT"
}

@test "no reachable sentinel: exit 69 naming each one, and the command does not run" {
    local dead1 dead2
    dead1=$(free_port)
    dead2=$(free_port)
    run "$RL" -u "redis-sentinel://127.0.0.1:$dead1,127.0.0.1:$dead2/$MASTER_NAME" job -- \
        touch "$BATS_TEST_TMPDIR/ran"
    assert_failure 69
    assert_output --partial "no sentinel could tell where master '$MASTER_NAME' is"
    assert_output --partial "127.0.0.1:$dead1"
    assert_output --partial "127.0.0.1:$dead2"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "a master name the sentinels do not know: exit 69" {
    run "$RL" -u "redis-sentinel://127.0.0.1:$S1_PORT/nosuchmaster" job -- true
    assert_failure 69
    assert_output --partial "the sentinel at 127.0.0.1:$S1_PORT does not know master 'nosuchmaster'"
}

@test "a sentinel that names a replica as master is refused after ROLE (exit 69)" {
    sentinel_start STALE "$REPLICA_PORT"
    run "$RL" -u "redis-sentinel://127.0.0.1:$STALE_PORT/$MASTER_NAME" job -- \
        touch "$BATS_TEST_TMPDIR/ran"
    assert_failure 69
    assert_output --partial "named 127.0.0.1:$REPLICA_PORT as master '$MASTER_NAME', but it says it is a slave"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "status, list and release work through the sentinels" {
    hold job -u "$SENTINEL_URL"
    run "$RL" status -u "$SENTINEL_URL" job
    assert_success
    assert_output --partial "state:    held"
    run "$RL" list -u "$SENTINEL_URL"
    assert_success
    assert_output --partial "job"
    run "$RL" release -u "$SENTINEL_URL" --force job
    assert_success
    assert_output --partial "released lock 'job'"
    [ "$(ncli "$MASTER_PORT" EXISTS job)" = 0 ]
    stop_holder
}

@test "a SENTINEL FAILOVER with the key replicated keeps the lock: renewed and released on the new master" {
    rl_start -v -u "$SENTINEL_URL" -t 3s job -- "${LONG_JOB[@]}"
    wait_for 5 file_exists "$BATS_TEST_TMPDIR/started"
    local token
    token=$(ncli "$MASTER_PORT" GET job)
    fail_over_to_replica
    # The new master got the key by replication; a renewal that reaches it resets its TTL.
    [ "$(ncli "$REPLICA_PORT" GET job)" = "$token" ]
    local before
    before=$(ncli "$REPLICA_PORT" PTTL job)
    # Once failed in a CI run under load (2026-12-03), not reproduced since: show the run's log.
    wait_for 10 pttl_above "$REPLICA_PORT" job "$before" || { cat "$RL_ERR" >&2; false; }
    assert file_contains "$RL_ERR" "moved from 127.0.0.1:$MASTER_PORT to 127.0.0.1:$REPLICA_PORT"
    touch "$BATS_TEST_TMPDIR/stop"
    rl_finish 10
    [ "$RL_STATUS" = 0 ]
    [ "$(ncli "$REPLICA_PORT" EXISTS job)" = 0 ]
    run cat "$RL_ERR"
    refute_output --partial "lost"
}

@test "the master dies: renewals ask the sentinels again and carry on on the promoted replica" {
    wait_for 20 sentinels_know_each_other "$S1_PORT"
    wait_for 20 sentinel_sees_replica "$S1_PORT"
    rl_start -v -u "$SENTINEL_URL" -t 10s job -- "${LONG_JOB[@]}"
    wait_for 5 file_exists "$BATS_TEST_TMPDIR/started"
    local started_at
    started_at=$(now_ms)
    node_stop "$MASTER_PID"
    wait_for 30 sentinel_points_to "$S1_PORT" "$REPLICA_PORT"
    wait_for 30 role_is "$REPLICA_PORT" master
    local before
    before=$(ncli "$REPLICA_PORT" PTTL job)
    wait_for 10 pttl_above "$REPLICA_PORT" job "$before"
    echo "failover and first renewal on the new master after $(($(now_ms) - started_at))ms" >&3
    touch "$BATS_TEST_TMPDIR/stop"
    rl_finish 10
    [ "$RL_STATUS" = 0 ]
    [ "$(ncli "$REPLICA_PORT" EXISTS job)" = 0 ]
    run cat "$RL_ERR"
    assert_output --partial "says master '$MASTER_NAME' is at 127.0.0.1:$REPLICA_PORT"
    refute_output --partial "lost"
}

@test "a failover to a replica that lacks the key loses the lock: the command is stopped, exit 76, no re-acquire" {
    rl_start -u "$SENTINEL_URL" -t 3s job -- "${LONG_JOB[@]}"
    wait_for 5 file_exists "$BATS_TEST_TMPDIR/started"
    # The replica loses the key behind replication's back, as an asynchronous copy can.
    ncli "$REPLICA_PORT" CONFIG SET replica-read-only no
    ncli "$REPLICA_PORT" DEL job
    fail_over_to_replica
    rl_finish 10
    [ "$RL_STATUS" = 76 ]
    assert file_exists "$BATS_TEST_TMPDIR/termed"
    run cat "$RL_ERR"
    assert_output --partial "lock 'job' lost: the key no longer holds this run's token"
    # Never taken again on the new master.
    [ "$(ncli "$REPLICA_PORT" EXISTS job)" = 0 ]
}

@test "a failover to a replica where another token holds the key loses the lock and leaves that holder alone" {
    rl_start -u "$SENTINEL_URL" -t 3s job -- "${LONG_JOB[@]}"
    wait_for 5 file_exists "$BATS_TEST_TMPDIR/started"
    ncli "$REPLICA_PORT" CONFIG SET replica-read-only no
    ncli "$REPLICA_PORT" SET job someone-else
    fail_over_to_replica
    rl_finish 10
    [ "$RL_STATUS" = 76 ]
    assert file_exists "$BATS_TEST_TMPDIR/termed"
    run cat "$RL_ERR"
    assert_output --partial "lock 'job' lost: the key no longer holds this run's token"
    [ "$(ncli "$REPLICA_PORT" GET job)" = someone-else ]
}

@test "sentinels with a password: --sentinel-password-file logs in, without it exit 77" {
    SENTINEL_AUTH=sentinel-secret sentinel_start LOCKED "$MASTER_PORT" "requirepass sentinel-secret"
    local url="redis-sentinel://127.0.0.1:$LOCKED_PORT/$MASTER_NAME"
    echo sentinel-secret >"$BATS_TEST_TMPDIR/sentinel.pass"
    run "$RL" -u "$url" --sentinel-password-file "$BATS_TEST_TMPDIR/sentinel.pass" job -- true
    assert_success
    REDLOCK_SENTINEL_PASSWORD_FILE="$BATS_TEST_TMPDIR/sentinel.pass" run "$RL" -u "$url" job -- true
    assert_success
    run "$RL" -u "$url" job -- touch "$BATS_TEST_TMPDIR/ran"
    assert_failure 77
    assert_output --partial "NOAUTH"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "--sentinel-password-file with a redis:// URL is a usage error" {
    echo pw >"$BATS_TEST_TMPDIR/sentinel.pass"
    run "$RL" -u "redis://127.0.0.1:$MASTER_PORT" --sentinel-password-file \
        "$BATS_TEST_TMPDIR/sentinel.pass" job -- true
    assert_failure 64
    assert_output --partial "--sentinel-password-file needs a redis-sentinel:// URL"
}

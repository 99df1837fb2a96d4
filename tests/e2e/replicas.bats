#!/usr/bin/env bats
# --min-replicas: WAIT after the acquire and after each renewal, against a real master with one
# real replica (redis-server --replicaof).

load helpers
load sentinel_helpers

# Success cases give WAIT a generous timeout: a loaded test machine may take more than the
# default 100ms to deliver an acknowledgement, and these tests are about the count, not speed.
setup() {
    master_with_replica
    export REDLOCK_URL="redis://127.0.0.1:$MASTER_PORT"
}

teardown() {
    rl_cleanup
    nodes_stop_all
}

@test "with the replica connected, --min-replicas 1 runs the command and releases" {
    run "$RL" -v --min-replicas 1 --replica-timeout 3s job -- sh -c "redis-cli -p $REPLICA_PORT GET job"
    assert_success
    # The replica had the lock by the time the command started.
    assert_line --regexp '^[0-9a-f]{32}$'
    assert_output --partial "1 replica(s) acknowledged the acquire of lock 'job'"
    [ "$(cli "$MASTER_PORT" EXISTS job)" = 0 ]
}

@test "with the replica stopped, --min-replicas 1 releases the lock and exits 69 without running the command" {
    node_stop "$REPLICA_PID"
    run "$RL" --min-replicas 1 job -- touch "$BATS_TEST_TMPDIR/ran"
    assert_failure 69
    assert_output --partial "only 0 of the 1 replica(s) that --min-replicas asks for acknowledged the acquire of lock 'job'"
    assert_output --partial "released it and did not run the command"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    [ "$(cli "$MASTER_PORT" EXISTS job)" = 0 ]
}

@test "--min-replicas 2 with one replica fails with 69 and leaves no lock behind" {
    # A second for the one replica's acknowledgement to arrive, even under a sanitizer.
    run "$RL" --min-replicas 2 --replica-timeout 1s job -- touch "$BATS_TEST_TMPDIR/ran"
    assert_failure 69
    assert_output --partial "only 1 of the 2 replica(s)"
    assert_output --partial "within 1s (--replica-timeout)"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    [ "$(cli "$MASTER_PORT" EXISTS job)" = 0 ]
}

@test "REDLOCK_MIN_REPLICAS is read from the environment" {
    # A second, not the default 100ms: the one replica's acknowledgement must arrive in time
    # on a loaded machine for the count to be 1.
    REDLOCK_MIN_REPLICAS=2 REDLOCK_REPLICA_TIMEOUT=1s run "$RL" job -- touch "$BATS_TEST_TMPDIR/ran"
    assert_failure 69
    assert_output --partial "only 1 of the 2 replica(s)"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    REDLOCK_MIN_REPLICAS=1 REDLOCK_REPLICA_TIMEOUT=3s run "$RL" job -- true
    assert_success
}

@test "a replica lost while the command runs: renewals are not confirmed, the command is stopped before the lease ends, exit 76" {
    # The acquire's WAIT gets a second (the most a 6s ttl allows): on a loaded machine 600ms was
    # not always enough for the one replica to acknowledge, and the command never started.
    # --kill-after 1s: the TERM trap forks a touch, which on a loaded machine took longer than
    # the 100ms this test gave it before the SIGKILL.
    rl_start --min-replicas 1 --replica-timeout 1s -t 6s --kill-after 1s job -- sh -c \
        'touch "$0/started"; trap "touch \"\$0/termed\"; exit 143" TERM; while :; do sleep 0.05; done' \
        "$BATS_TEST_TMPDIR"
    wait_for 5 file_exists "$BATS_TEST_TMPDIR/started"
    node_stop "$REPLICA_PID"
    rl_finish 10
    [ "$RL_STATUS" = 76 ]
    assert file_exists "$BATS_TEST_TMPDIR/termed"
    run cat "$RL_ERR"
    assert_output --partial "lock 'job' lost: no renewal succeeded in time"
    assert_output --partial "last renewal error: only 0 of the 1 replica(s) that --min-replicas asks for acknowledged the renewal of lock 'job'"
    # Released on the way out, not left to expire.
    [ "$(cli "$MASTER_PORT" EXISTS job)" = 0 ]
}

@test "bad --min-replicas and --replica-timeout values are usage errors" {
    run "$RL" --min-replicas -1 job -- true
    assert_failure 64
    assert_output --partial "invalid value '-1' for --min-replicas: expected 0-100"
    run "$RL" --min-replicas 1000000 job -- true
    assert_failure 64
    run "$RL" --min-replicas two job -- true
    assert_failure 64
    run "$RL" --min-replicas 1 --replica-timeout 0 job -- true
    assert_failure 64
    run "$RL" --min-replicas 1 --replica-timeout -5ms job -- true
    assert_failure 64
    run "$RL" --min-replicas 1 --replica-timeout 5s -t 3s job -- true
    assert_failure 64
    assert_output --partial "--replica-timeout (5s) must be at most a quarter of --ttl minus --renew-every"
    run "$RL" --replica-timeout 50ms job -- true
    assert_failure 64
    assert_output --partial "--replica-timeout needs --min-replicas"
    [ "$(cli "$MASTER_PORT" EXISTS job)" = 0 ]
}

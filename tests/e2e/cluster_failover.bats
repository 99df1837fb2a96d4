#!/usr/bin/env bats
# Redis Cluster failover: the master holding a lock dies, its replica is promoted, and a running
# redlock-run finds the new master by re-reading the slot map from the surviving nodes.
load cluster_helpers
load contenders
bats_require_minimum_version 1.5.0

# Three masters with a replica each; a short node timeout so a failover takes a second or two.
setup_file() { cluster_start 6 1 1000; }
teardown_file() { cluster_stop; }

setup() {
    export REDLOCK_URL="$CLUSTER_URL"
    GATE="$BATS_TEST_TMPDIR/gate"
}

teardown() {
    touch "$GATE"
    contenders_cleanup
    rl_cleanup
    if [ -n "${REPLICATION_CUT:-}" ]; then
        cli "$REPLICATION_CUT" ACL SETUSER default +psync +sync >/dev/null || true
        REPLICATION_CUT=
    fi
}

@test "the lock's master dies; the renewals find the promoted replica and the run ends cleanly" {
    owner=$(slot_owner_port "$(cluster_keyslot job)")
    replica=$(replica_port "$owner")
    [ -n "$replica" ]
    rl_start -v --ttl 15s job -- bash -c 'g=$0; '"$AWAIT" "$GATE"
    wait_for 10 ckey_exists job
    # The lock reached the replica before the failover (replication is asynchronous: had it not,
    # the lock would be lost, which the man page documents).
    wait_for 10 replica_has job "$replica"
    kill -9 "$(node_pid "$owner")"
    wait_for 20 is_master "$replica"
    wait_for 20 at_least_after "$RL_ERR" "renewing lock 'job' failed" "renewed lock" 1
    touch "$GATE"
    rl_finish 10
    assert_equal "$RL_STATUS" 0
    refute grep -Eq "lock 'job' lost|gone at release|taken over" "$RL_ERR"
    file_contains "$RL_ERR" "released lock 'job'"
    assert_equal "$(cli "$replica" EXISTS job)" 0
}

# Loops of --wait contenders (issue 16) on a lock whose master fails over. A manual CLUSTER
# FAILOVER loses no write (the master pauses its clients until the replica has caught up), so
# there no overlap at all is admitted. A killed master can lose its last writes: the man page
# admits an overlap then, until the holder whose key was lost learns it (its run ends 76). Either
# way fences never repeat and grow in the order the commands started; waiters ride it out.
@test "contenders across a CLUSTER FAILOVER, then a killed master: no overlap but the admitted one, fences growing" {
    wait_for 20 live_pair
    local name slot
    name=$(name_on_port "$PAIR_MASTER" churn)
    slot=$(cluster_keyslot "$name")
    contenders_start 4 "$name" --wait 30s -t 1s
    contenders_progress 60 3
    run cli "$PAIR_REPLICA" CLUSTER FAILOVER
    assert_output OK
    wait_for 20 owner_everywhere "$slot" "$PAIR_REPLICA"
    contenders_progress 60 4
    contenders_stop
    contenders_check

    # The old master is the new one's replica now; kill the new one.
    wait_for 20 replica_linked "$PAIR_MASTER"
    contenders_start 4 "$name" --wait 30s -t 1s
    contenders_progress 60 3
    kill -9 "$(node_pid "$PAIR_REPLICA")"
    wait_for 30 owner_everywhere "$slot" "$PAIR_MASTER"
    contenders_progress 60 4
    contenders_stop
    contenders_check --admit-key-lost
}

# The Cluster version of the Sentinel test: the promoted replica's fence counter lags the fences
# its master handed out (its link was cut, so it never got the last increments), and it takes
# over without the master. The next fence must still be above every earlier one.
@test "fences keep growing across a Cluster replica promotion whose fence counter lags behind" {
    wait_for 20 live_pair
    local name slot first last i
    name=$(name_on_port "$PAIR_MASTER" fence)
    slot=$(cluster_keyslot "$name")
    run "$RL" "$name" -- printenv REDLOCK_FENCE
    assert_success
    first=$output
    wait_for 10 replica_has_counter "$PAIR_REPLICA" "{$name}:fence" "$first"
    # The master refuses the replica's resync, and the link is cut: the replica hears no more.
    REPLICATION_CUT=$PAIR_MASTER
    cli "$PAIR_MASTER" ACL SETUSER default -psync -sync >/dev/null
    cli "$PAIR_MASTER" CLIENT KILL TYPE replica >/dev/null
    wait_for 10 replica_unlinked "$PAIR_REPLICA"
    last=$first
    for i in 1 2 3; do
        run "$RL" "$name" -- printenv REDLOCK_FENCE
        assert_success
        [ "$output" -gt "$last" ]
        last=$output
    done
    [ "$(replica_get "$PAIR_REPLICA" "{$name}:fence")" = "$first" ]
    # Promoted as it is: TAKEOVER asks neither the master nor the other masters.
    run cli "$PAIR_REPLICA" CLUSTER FAILOVER TAKEOVER
    assert_output OK
    wait_for 20 owner_everywhere "$slot" "$PAIR_REPLICA"
    run "$RL" "$name" -- printenv REDLOCK_FENCE
    assert_success
    [ "$output" -gt "$last" ]
    # Never below the new master's clock in microseconds.
    local clock
    clock=$(cli "$PAIR_REPLICA" TIME | head -n 1)
    [ "$output" -gt "$(((clock - 60) * 1000000))" ]
}

replica_has_counter() { [ "$(replica_get "$1" "$2")" = "$3" ]; }
replica_unlinked() { ! replica_linked "$1"; }

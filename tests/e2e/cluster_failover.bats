#!/usr/bin/env bats
# Redis Cluster failover: the master holding a lock dies, its replica is promoted, and a running
# redlock-run finds the new master by re-reading the slot map from the surviving nodes.
load cluster_helpers
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
    rl_cleanup
}

@test "the lock's master dies; the renewals find the promoted replica and the run ends cleanly" {
    owner=$(slot_owner_port "$(cluster_keyslot job)")
    replica=$(replica_port "$owner")
    [ -n "$replica" ]
    rl_start -v --ttl 15s job -- sh -c 'while [ ! -e "$0" ]; do sleep 0.02; done' "$GATE"
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
    assert_equal "$(ccli "$replica" EXISTS job)" 0
}

#!/usr/bin/env bats
# A Redis that restarts under a held lock: the holder must ride out a restart that keeps the key
# (reconnecting and re-sending its scripts) and must stop its command when the key did not
# survive.
load helpers
load contenders

teardown() {
    touch "$BATS_TEST_TMPDIR/go"
    contenders_cleanup
    rl_cleanup
    redis_stop
}

renew_sha() { sha1sum "$BATS_TEST_DIRNAME/../../src/lock/scripts/renew.lua" | cut -d' ' -f1; }
script_cached() { [ "$(cli "$REDIS_PORT" SCRIPT EXISTS "$1")" = 1 ]; }

@test "a restart that keeps the data: the holder reconnects, renews and finishes normally" {
    redis_start --appendonly yes --appendfsync always
    local d=$BATS_TEST_TMPDIR sha
    sha=$(renew_sha)
    # A lease far longer than the restart can take on a loaded machine: what is tested is what
    # the renewals find after it, not a race with the lease's end.
    rl_start -t 20s --renew-every 200ms survivor -- sh -c \
        "touch '$d/ready'; while [ ! -e '$d/go' ]; do sleep 0.02; done"
    wait_for 5 file_exists "$d/ready"
    local token
    token=$(cli "$REDIS_PORT" GET survivor)
    redis_restart
    # A fresh server has no scripts: the renew script cached again proves a renewal after the
    # restart, sent by EVALSHA, refused with NOSCRIPT, then sent by EVAL.
    wait_for 5 script_cached "$sha"
    [ "$(cli "$REDIS_PORT" GET survivor)" = "$token" ]
    touch "$d/go"
    rl_finish 10
    assert_equal "$RL_STATUS" 0
    key_absent survivor
}

@test "a restart that loses the data: the holder stops its command and exits 76" {
    redis_start
    local d=$BATS_TEST_TMPDIR
    # As above: with -t 3s, a restart slower than the lease (seen in a TSan pass) ended the lease
    # before a renewal could find the key gone, a correct exit 76 for another reason.
    rl_start -t 20s --renew-every 200ms forgotten -- sh -c \
        "trap 'touch \"$d/termed\"; exit 0' TERM; touch '$d/ready'; while :; do sleep 0.02; done"
    wait_for 5 file_exists "$d/ready"
    redis_restart
    key_absent forgotten
    rl_finish 10
    assert_equal "$RL_STATUS" 76
    [ -e "$d/termed" ]
    run cat "$RL_ERR"
    assert_output --partial "lock 'forgotten' lost: the key no longer holds this run's token"
}

@test "a primary demoted to a replica (failover): READONLY renewals stop the command in time" {
    redis_start
    local d=$BATS_TEST_TMPDIR
    # A 6s lease: the command's TERM trap (a forked touch) then has about 2.9s before the SIGKILL
    # at the lease end. With 2s it had 770ms, which an ASan pass beside the TSan build once
    # did not leave it (ciO).
    rl_start -t 6s --renew-every 200ms demoted -- sh -c \
        "trap 'touch \"$d/termed\"; exit 0' TERM; touch '$d/ready'; while :; do sleep 0.02; done"
    wait_for 5 file_exists "$d/ready"
    # Pointing it at a master that does not exist keeps its data but refuses every write.
    cli "$REDIS_PORT" REPLICAOF 127.0.0.1 "$(free_port)" >/dev/null
    wait_for 15 file_exists "$d/termed"
    rl_finish 10
    assert_equal "$RL_STATUS" 76
    run cat "$RL_ERR"
    assert_output --partial "lock 'demoted' lost: no renewal succeeded in time"
}

# A restart without persistence forgets the key: a waiter can take the lock at once while the
# holder learns of the loss only at its next renewal. The man page admits exactly that overlap
# (the holder's run then ends 76, "no longer holds this run's token"); any other overlap, a
# repeated fence or a fence that does not grow with the start order fails.
@test "contenders across restarts without persistence: no overlap but the admitted one, fences unique and growing" {
    redis_start
    contenders_start 4 churn --wait 30s -t 1s
    contenders_progress 60 3
    redis_restart
    contenders_progress 60 3
    redis_restart
    contenders_progress 60 3
    contenders_stop
    contenders_check --admit-key-lost
}

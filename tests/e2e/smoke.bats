#!/usr/bin/env bats
load helpers

setup() { redis_start; }
teardown() { redis_stop; }

@test "runs the command under the lock and releases it" {
    run "$RL" smoke -- sh -c 'echo "fence=$REDLOCK_FENCE"; redis-cli -p '"$REDIS_PORT"' GET smoke'
    assert_success
    assert_line --regexp '^fence=[0-9]+$'
    assert_line --regexp '^[0-9a-f]{32}$'
    key_absent smoke
}

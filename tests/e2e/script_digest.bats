#!/usr/bin/env bats
# The scripts' SHA1 digests are computed at build time (cmake/embed.cmake); they must be the ones
# Redis computes, or every EVALSHA would miss and fall back to sending the whole script.
load helpers

setup() { redis_start; }
teardown() { redis_stop; }

@test "after the first run Redis knows every script by its build-time digest" {
    run "$RL" -v digest -- true
    assert_success
    assert_output --partial 'not cached'
    run "$RL" -v digest -- true
    assert_success
    refute_output --partial 'not cached'
    # The scripts a run sends, as embedded: the queue functions, then acquire.lua, and the
    # ledger script that records the run and releases the lock (the ledger is on by default).
    local src="$BATS_TEST_DIRNAME/../../src/lock/scripts" sha name
    for name in acquire ledger; do
        sha=$(cat "$src/lib/queue.lua" "$src/$name.lua" | sha1sum | cut -d' ' -f1)
        run rcli SCRIPT EXISTS "$sha"
        assert_output 1
    done
}

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
    run "$RL" --permits 2 digest-p -- true
    assert_success
    run "$RL" --shared digest-s -- true
    assert_success
    # The scripts those runs send, as embedded (CMakeLists.txt): the queue functions, then for
    # the scripts that record a run the record's functions, then for those that tell an abandoned
    # run its functions, then the script itself: acquire.lua,
    # the ledger script that records the run and releases the lock (the ledger is on by
    # default), and permits.lua and shared.lua, which do both in their 'finish'.
    local src="$BATS_TEST_DIRNAME/../../src/lock/scripts" sha name
    sha=$(cat "$src/lib/queue.lua" "$src/lib/abandoned.lua" "$src/acquire.lua" | sha1sum |
        cut -d' ' -f1)
    run cli "$REDIS_PORT" SCRIPT EXISTS "$sha"
    assert_output 1
    for name in ledger permits shared; do
        sha=$(cat "$src/lib/queue.lua" "$src/lib/ledger.lua" "$src/$name.lua" | sha1sum |
            cut -d' ' -f1)
        run cli "$REDIS_PORT" SCRIPT EXISTS "$sha"
        assert_output 1
    done
}

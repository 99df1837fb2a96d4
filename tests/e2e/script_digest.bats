#!/usr/bin/env bats
# The scripts' SHA1 digests are computed at build time (cmake/embed.cmake); they must be the ones
# Redis computes, or every EVALSHA would miss and fall back to sending the whole script.
load helpers

setup() { redis_start; }
teardown() { redis_stop; }

# How many NOSCRIPT errors the server has answered (Redis 7's INFO errorstats).
noscripts() {
    local n
    n=$(cli "$REDIS_PORT" INFO errorstats | tr -d '\r' | sed -n 's/^errorstat_NOSCRIPT:count=//p')
    echo "${n:-0}"
}

@test "after the first run Redis knows every script by its build-time digest" {
    run "$RL" digest -- true
    assert_success
    # The first run found the cache empty: an EVALSHA was answered NOSCRIPT.
    [ "$(noscripts)" -ge 1 ]
    local before
    before=$(noscripts)
    run "$RL" digest -- true
    assert_success
    # The second run's EVALSHAs all hit: the digests computed at build time are Redis's.
    [ "$(noscripts)" = "$before" ]
    run "$RL" --permits 2 digest-p -- true
    assert_success
    run "$RL" --shared digest-s -- true
    assert_success
    # The scripts those runs send, as embedded (CMakeLists.txt): the queue functions, then for
    # the scripts that record a run the record's functions, then for those that tell an abandoned
    # run its functions, then (acquire.lua) the taking of a free lock, then the script itself:
    # acquire.lua,
    # the ledger script that records the run and releases the lock (the ledger is on by
    # default), and permits.lua and shared.lua, which do both in their 'finish'.
    local src="$BATS_TEST_DIRNAME/../../src/lock/scripts" sha name
    sha=$(cat "$src/lib/queue.lua" "$src/lib/abandoned.lua" "$src/lib/take.lua" "$src/acquire.lua" |
        sha1sum | cut -d' ' -f1)
    run cli "$REDIS_PORT" SCRIPT EXISTS "$sha"
    assert_output 1
    for name in ledger permits shared; do
        # (ledger.lua and shared.lua, which may hand the lock to the queue's head, with
        # lib/take.lua and lib/share.lua last.)
        sha=$(cat "$src/lib/queue.lua" "$src/lib/ledger.lua" "$src/lib/abandoned.lua" \
            "$src/lib/open_runs.lua" \
            $([ "$name" = permits ] || echo "$src/lib/take.lua $src/lib/share.lua") \
            "$src/$name.lua" | sha1sum | cut -d' ' -f1)
        run cli "$REDIS_PORT" SCRIPT EXISTS "$sha"
        assert_output 1
    done
}

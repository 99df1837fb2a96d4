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
    # Without a memory of the servers (no cache directory: script_memory.hpp) the first run sends
    # digests and finds the cache empty: an EVALSHA was answered NOSCRIPT.
    XDG_CACHE_HOME=/nonexistent/none run "$RL" digest -- true
    assert_success
    [ "$(noscripts)" -ge 1 ]
    local before
    before=$(noscripts)
    run "$RL" digest -- true
    assert_success
    # The second run's EVALSHAs all hit: the digests computed at build time are Redis's. (This
    # run's memory did not know the server: it sent the bodies, and remembered their digests.)
    [ "$(noscripts)" = "$before" ]
    run "$RL" --permits 2 digest-p -- true
    assert_success
    run "$RL" --shared digest-s -- true
    assert_success
    # Sent by digest now, as the memory knows them: all found.
    before=$(noscripts)
    run "$RL" digest -- true
    assert_success
    run "$RL" --permits 2 digest-p -- true
    assert_success
    run "$RL" --shared digest-s -- true
    assert_success
    [ "$(noscripts)" = "$before" ]
    [ "$(cli "$REDIS_PORT" INFO commandstats | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')" -ge 3 ]
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

@test "a run in database 2 sends its acquire by a digest made at run time, which Redis knows" {
    # The acquire behind SELECT 2 in the set-up's write selects database 2 itself
    # (Script::for_setup): a script of its own, whose digest is computed by the run.
    run "$RL" -u "$REDIS_URL/2" digest2 -- true
    assert_success
    cli "$REDIS_PORT" CONFIG RESETSTAT >/dev/null
    run "$RL" -u "$REDIS_URL/2" digest2 -- true
    assert_success
    # By digest, and found: no NOSCRIPT.
    [ "$(noscripts)" = 0 ]
    [ "$(cli "$REDIS_PORT" INFO commandstats | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')" -ge 1 ]
    # It ran in database 2, and nothing went to database 0.
    assert_equal "$(cli "$REDIS_PORT" -n 0 DBSIZE)" 0
    [ "$(cli "$REDIS_PORT" -n 2 EXISTS '{digest2}:fence')" = 1 ]
}

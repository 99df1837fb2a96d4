#!/usr/bin/env bats
# The known races of waiting with a wake-one signal (python-redis-lock #58, #71): a wake-up lost
# because the waiter it went to died, a release that falls between a waiter's failed attempt and
# its BLPOP, and newcomers barging in ahead of waiters.
load helpers
load failure_helpers

setup() { redis_start; }
teardown() {
    touch "$BATS_TEST_TMPDIR/go" "$BATS_TEST_TMPDIR/stop"
    local pid
    for pid in ${KILL_AT_END:-}; do
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    [ -n "${HOLDER:-}" ] && wait "$HOLDER" 2>/dev/null || true
    rl_cleanup
    monitor_stop
    proxy_stop
    redis_stop
}


@test "a wake-up taken by a waiter that then dies is not lost: the next one gets the lock after one bounded recheck" {
    local d=$BATS_TEST_TMPDIR
    # Scripts cached first: a run that meets an empty cache sends every script's body (EVAL),
    # and the checks below find the release and the acquires by their digests.
    "$RL" warm-up -- true
    # A 6s lease: with 3s, a TSan pass once saw the holder's renewals fail for 2s and its lease
    # end before the waiters queued.
    hold_until lost "$d/go" --ttl 6s
    # The first waiter's presence mark outlives its block by 2*500ms + 1s.
    "$RL" --wait 60s --command-timeout 500ms lost -- touch "$d/first" &
    local first=$!
    KILL_AT_END="$first"
    wait_for 5 blocked_is 1
    "$RL" --wait 60s lost -- touch "$d/second" &
    local second=$!
    KILL_AT_END="$first $second"
    wait_for 5 blocked_is 2
    local first_token second_token
    first_token=$(cli "$REDIS_PORT" LINDEX '{lost}:wait' 0)
    second_token=$(cli "$REDIS_PORT" LINDEX '{lost}:wait' 1)
    [ -n "$first_token" ] && [ -n "$second_token" ]

    monitor_start
    # Frozen in its BLPOP: Redis hands it the release's wake-up, and it can never act on it.
    kill -STOP "$first"
    touch "$d/go"
    wait "$HOLDER"
    local released
    released=$(now_ms)
    # Consumed, by the frozen waiter's BLPOP (or, if it happened to be between two blocks, here).
    cli "$REDIS_PORT" DEL "{lost}:wake:$first_token" >/dev/null
    kill -9 "$first"
    wait "$first" || true

    wait "$second"
    local took=$(($(now_ms) - released))
    monitor_stop
    [ -e "$d/second" ]
    [ ! -e "$d/first" ]
    # Its acquires after the release: one when its block (the holder's TTL) ran out, which found
    # the lock reserved for the dead waiter and learnt how long that reservation can last, and one
    # when it had: the recheck is bounded, not a poll.
    local release_sha acquire_sha attempts
    # The holder ends its run with the ledger script, which releases (the ledger is on by default).
    release_sha=$(script_sha ledger)
    acquire_sha=$(script_sha acquire)
    attempts=$(sed -n "/\"EVALSHA\" \"$release_sha\"/,\$p" "$MONITOR_OUT" |
        grep "\"EVALSHA\" \"$acquire_sha\"" | grep -c "\"$second_token\"")
    echo "# second waiter ran ${took}ms after the release, after $attempts acquire attempts" >&3
    [ "$attempts" -ge 1 ] && [ "$attempts" -le 3 ]
    # The holder's TTL (6s) + the dead waiter's presence grace (2s) is what it takes; a lost
    # wake-up would wait out the second waiter's 60s. Halfway between leaves a slow machine 22s.
    [ "$took" -le 30000 ]
}

@test "a release between a waiter's failed attempt and its BLPOP does not lose the wake-up" {
    local d=$BATS_TEST_TMPDIR
    # A 60s TTL: a lost wake-up would leave the waiter blocked for about that long.
    hold_until race "$d/go" --ttl 60s
    proxy_start --delay BLPOP:1500
    rl_start --wait 2m -u "$PROXY_URL" race -- touch "$d/ran"
    # The waiter has failed its attempt and queued; its BLPOP is held back by the proxy.
    wait_for 5 file_contains "$PROXY_LOG" "delayed BLPOP"
    local waiter
    waiter=$(cli "$REDIS_PORT" LINDEX '{race}:wait' 0)
    [ -n "$waiter" ]
    touch "$d/go"
    wait "$HOLDER"
    # The release handed the lock to the waiter (issue 35): its token, while its BLPOP is still
    # on the way.
    assert_equal "$(cli "$REDIS_PORT" GET race)" "$waiter"
    # The wake-up waits in the waiter's own list until its BLPOP arrives.
    rl_finish 15
    assert_equal "$RL_STATUS" 0
    [ -e "$d/ran" ]
}

@test "newcomers, waiting or not, cannot take the lock ahead of a waiter" {
    local d=$BATS_TEST_TMPDIR
    hold_until starve "$d/go"
    "$RL" --wait 60s starve -- sh -c 'echo waiter >> "$0"; sleep 0.2' "$d/order" &
    local waiter=$!
    KILL_AT_END="$waiter"
    wait_for 5 blocked_is 1
    # Runs without --wait, trying as fast as they can, before, during and after the hand-off.
    (while [ ! -e "$d/stop" ]; do
        "$RL" -q -E 0 starve -- sh -c 'echo barger >> "$0"' "$d/order"
    done) 3>&- &
    local bargers=$!
    # And a run that waits, arriving after the first waiter.
    "$RL" --wait 60s starve -- sh -c 'echo newcomer >> "$0"; sleep 0.2' "$d/order" &
    local newcomer=$!
    KILL_AT_END="$waiter $newcomer $bargers"
    wait_for 5 queue_length_is starve 2
    sleep 0.5 # let the bargers hammer the held lock for a while
    touch "$d/go"
    wait "$HOLDER"
    wait "$waiter"
    wait "$newcomer"
    # Once the queue is empty the bargers may have it: that they do proves they were trying.
    wait_for 10 file_contains "$d/order" barger
    touch "$d/stop"
    wait "$bargers"
    run cat "$d/order"
    echo "$output" | head -5
    assert_equal "${lines[0]}" waiter
    assert_equal "${lines[1]}" newcomer
}

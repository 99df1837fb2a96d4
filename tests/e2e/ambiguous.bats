#!/usr/bin/env bats
# Ambiguous acquires: the acquire script ran in Redis but its reply never came back (the
# connection dropped, or the reply timed out), so the lock may be ours. A proxy between the tool
# and a real redis-server forwards the command and loses its reply. The run must find its own
# token and go on with the lock (fenced once), or, when it gives up, leave no key of its own.
load helpers
load failure_helpers
bats_require_minimum_version 1.5.0

setup() {
    redis_start
    # Cache the scripts first: a NOSCRIPT reply lost on the way is no ambiguity at all.
    "$RL" warmup -- true
}
teardown() {
    touch "$BATS_TEST_TMPDIR/go"
    local pid
    for pid in ${HOLDER:-} ${FIRST:-}; do
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rl_cleanup
    proxy_stop
    redis_stop
}

# How many acquires the proxy lost: by digest, or with the body (the proxy's port is a server
# this test's runs never ran a script on, so the first goes with its body: script_memory.hpp).
dropped_acquires() { grep -Ec '^dropped EVAL(SHA)?$' "$PROXY_LOG" 2>/dev/null || true; }

@test "an acquire whose connection drops before the reply is asked again and holds the lock, fenced once" {
    # Ahead of Redis's clock in microseconds (the fence's floor), so the next fence is one above.
    cli "$REDIS_PORT" SET '{amb}:fence' 4000000000000041 >/dev/null
    proxy_start --drop 1 --mode close
    run "$RL" -v -u "$PROXY_URL" amb -- sh -c \
        'echo "$REDLOCK_FENCE" > "$0"; [ "$(redis-cli -p "$REDIS_PORT" GET amb)" = "$REDLOCK_TOKEN" ]' \
        "$BATS_TEST_TMPDIR/fence"
    assert_success
    assert_equal "$(dropped_acquires)" 1
    assert_line --regexp "^redlock-run: no reply to the acquire of lock 'amb' .*asking again with the same token"
    # The lost attempt drew fence ...42; the re-send found the key holding its own token and
    # reported that same fence, without drawing another.
    assert_equal "$(cat "$BATS_TEST_TMPDIR/fence")" 4000000000000042
    assert_equal "$(cli "$REDIS_PORT" GET '{amb}:fence')" 4000000000000042
    key_absent amb
}

@test "an acquire whose reply times out is asked again and holds the lock" {
    proxy_start --drop 1 --mode stall
    run "$RL" -v --command-timeout 300ms -u "$PROXY_URL" slowreply -- touch "$BATS_TEST_TMPDIR/ran"
    assert_success
    assert_equal "$(dropped_acquires)" 1
    assert_output --partial "timed out"
    [ -e "$BATS_TEST_TMPDIR/ran" ]
    key_absent slowreply
}

@test "a run that gives up after unanswered acquires deletes the lock they took, at once" {
    # Both sends of the acquire lose their replies; the third script (the give-up) gets through.
    proxy_start --drop 2 --mode close
    run -69 "$RL" -t 10m -u "$PROXY_URL" gaveup -- touch "$BATS_TEST_TMPDIR/ran"
    assert_equal "$(dropped_acquires)" 2
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    # Gone now, not in 10 minutes: the run deleted it by its token.
    key_absent gaveup
    assert_output --partial "lock 'gaveup' had been taken by an acquire whose reply was lost; released it"
    assert_output --partial "closed the connection"
}

@test "the give-up leaves another run's lock alone" {
    # The lock is held by someone else: the lost replies would have said "busy".
    hold_until taken "$BATS_TEST_TMPDIR/go" -t 10m
    local theirs
    theirs=$(cli "$REDIS_PORT" GET taken)
    proxy_start --drop 2 --mode close
    run -69 "$RL" -u "$PROXY_URL" taken -- touch "$BATS_TEST_TMPDIR/ran"
    assert_equal "$(dropped_acquires)" 2
    assert_equal "$(cli "$REDIS_PORT" GET taken)" "$theirs"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    touch "$BATS_TEST_TMPDIR/go"
    wait "$HOLDER"
}

@test "a waiter whose queue-joining reply is lost is queued once and still gets the lock" {
    hold_until queued "$BATS_TEST_TMPDIR/go"
    proxy_start --drop 1 --mode close
    rl_start -v --wait 30s -u "$PROXY_URL" queued -- touch "$BATS_TEST_TMPDIR/ran"
    wait_for 5 file_contains "$RL_ERR" "no reply to the acquire of lock 'queued'"
    wait_for 5 queue_length_is queued 1
    # Its re-send found its token already queued and did not queue it twice.
    [ "$(cli "$REDIS_PORT" LRANGE '{queued}:wait' 0 -1 | wc -l)" = 1 ]
    touch "$BATS_TEST_TMPDIR/go"
    rl_finish 10
    assert_equal "$RL_STATUS" 0
    [ -e "$BATS_TEST_TMPDIR/ran" ]
    assert_equal "$(cli "$REDIS_PORT" KEYS '{queued}:wa*')" ""
}

@test "a run that gives up while queued leaves the queue, and the next waiter is not stranded" {
    hold_until strand "$BATS_TEST_TMPDIR/go" -t 10m
    # A first waiter queues normally. The second one's busy attempt queues it too, but that reply
    # and the re-send's are lost: it keeps trying (lost replies are transient while its wait
    # lasts), finds the lock still busy when the wait runs out (75), and must take itself out of
    # the queue.
    "$RL" --wait 30s strand -- touch "$BATS_TEST_TMPDIR/first" 3>&- &
    FIRST=$!
    wait_for 5 queue_length_is strand 1
    proxy_start --drop 2 --mode close
    rl_start --wait 3s -t 10m -u "$PROXY_URL" strand -- touch "$BATS_TEST_TMPDIR/gaveup"
    rl_finish 20
    assert_equal "$RL_STATUS" 75
    [ ! -e "$BATS_TEST_TMPDIR/gaveup" ]
    assert_equal "$(cli "$REDIS_PORT" LLEN '{strand}:wait')" 1
    touch "$BATS_TEST_TMPDIR/go"
    wait "$HOLDER"
    wait "$FIRST"
    [ -e "$BATS_TEST_TMPDIR/first" ]
}

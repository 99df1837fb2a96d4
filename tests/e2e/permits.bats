#!/usr/bin/env bats
# --permits N: up to N holders of one name at once, each with its own permit, token and fence.
load helpers
load holders_helpers

PROBE="$BATS_TEST_DIRNAME/permit_probe.py"

setup() { redis_start; }
teardown() {
    touch "$BATS_TEST_TMPDIR/go" "$BATS_TEST_TMPDIR/stop"
    local p
    for p in ${PIDS[@]+"${PIDS[@]}"}; do
        kill -9 "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    redis_stop
}

# gated NAME N [OPTIONS...]: a --permits N holder of NAME until $BATS_TEST_TMPDIR/go exists;
# appends its permit to $BATS_TEST_TMPDIR/permits once it runs.
gated() {
    local name=$1 n=$2
    shift 2
    "$RL" --permits "$n" "$@" "$name" -- bash -c \
        'echo "$PPID $REDLOCK_PERMIT" >> "$0/owners"; echo "$REDLOCK_PERMIT" >> "$0/permits"; g=$0/go; '"$AWAIT" \
        "$BATS_TEST_TMPDIR" &
    PIDS+=($!)
}

@test "12 contenders x 3 rounds with --permits 3: never more than 3 at once, never a permit twice, fences unique" {
    local i
    for i in $(seq 12); do crowd 3 0.15 - crowd --permits 3 --wait 60s --ttl 5s; done
    crowd_wait
    run "$PROBE" check "$BATS_TEST_TMPDIR/log" 3 36
    echo "$output"
    assert_success
    # 12 contenders on 3 permits: the permits were used together, not one at a time.
    assert_output --partial "peak 3"
    key_absent crowd
}

@test "N runs with --permits N hold the lock together (each waits for all N)" {
    local i dir=$BATS_TEST_TMPDIR/barrier
    mkdir "$dir"
    for i in 1 2 3 4; do
        "$RL" --permits 4 --wait 10s together -- sh -c \
            'touch "$0/$REDLOCK_PERMIT"; n=0; while [ "$(ls "$0" | wc -l)" -lt 4 ]; do
                 n=$((n + 1)); [ "$n" -lt 500 ] || exit 9; sleep 0.02; done' "$dir" &
        PIDS+=($!)
    done
    for i in "${PIDS[@]}"; do wait "$i"; done
    PIDS=()
    [ "$(ls "$dir" | sort | tr '\n' ' ')" = "1 2 3 4 " ]
}

@test "all N permits taken: the next run is busy (exit 75) and says so" {
    gated busy 2
    gated busy 2
    wait_for 5 lines_are "$BATS_TEST_TMPDIR/permits" 2
    run "$RL" --permits 2 busy -- true
    assert_failure 75
    assert_output --partial "all 2 permits of lock 'busy' are held"
    [ "$(sort "$BATS_TEST_TMPDIR/permits" | tr '\n' ' ')" = "1 2 " ]
}

@test "a freed permit wakes exactly one waiter, the longest waiting" {
    gated wake 2
    gated wake 2
    wait_for 5 lines_are "$BATS_TEST_TMPDIR/permits" 2
    local i
    for i in 1 2 3; do
        "$RL" --permits 2 --wait 30s wake -- sh -c 'echo "$0" >> "$1"; while [ ! -e "$2" ]; do sleep 0.02; done' \
            "$i" "$BATS_TEST_TMPDIR/order" "$BATS_TEST_TMPDIR/stop" &
        PIDS+=($!)
        wait_for 5 blocked_is "$i"
    done
    # Ends the first holder only: one permit is free, one waiter runs.
    kill -TERM "${PIDS[0]}"
    wait_for 5 lines_are "$BATS_TEST_TMPDIR/order" 1
    sleep 0.3
    [ "$(cat "$BATS_TEST_TMPDIR/order")" = 1 ]
    blocked_is 2
    touch "$BATS_TEST_TMPDIR/go" "$BATS_TEST_TMPDIR/stop"
    wait_for 5 lines_are "$BATS_TEST_TMPDIR/order" 3
    [ "$(sort "$BATS_TEST_TMPDIR/order" | tr '\n' ' ')" = "1 2 3 " ]
}

@test "status of a permits lock shows its waiters in order" {
    gated pw 2
    gated pw 2
    wait_for 5 lines_are "$BATS_TEST_TMPDIR/permits" 2
    local i
    for i in 1 2; do
        "$RL" --permits 2 --wait 30s pw -- true &
        PIDS+=($!)
        wait_for 5 blocked_is "$i"
    done
    run "$RL" status --json pw
    [ "$status" -eq 0 ]
    echo "$output" | jq -e --argjson a "${PIDS[2]}" --argjson b "${PIDS[3]}" \
        '.permits == 2 and .waiting == 2 and .waiters[0].pid == $a and .waiters[1].pid == $b
         and all(.waiters[]; .mode == "exclusive" and .since_ms > 0)'
    run "$RL" status pw
    [[ "$output" == *$'\nwaiting:  2\n  1. '*" pid ${PIDS[2]}, "*$'\n  2. '*" pid ${PIDS[3]}, "* ]]
    touch "$BATS_TEST_TMPDIR/go"
    wait "${PIDS[2]}"
    wait "${PIDS[3]}"
}

@test "a SIGKILLed holder's permit returns when its TTL ends, without help" {
    gated dead 2 --ttl 2s
    gated dead 2 --ttl 2s
    wait_for 5 lines_are "$BATS_TEST_TMPDIR/permits" 2
    local victim=${PIDS[0]}
    local victim_permit
    victim_permit=$(awk -v p="$victim" '$1 == p { print $2 }' "$BATS_TEST_TMPDIR/owners")
    [ -n "$victim_permit" ]
    # redlock-run dies without releasing; its watchdog ends the command.
    kill -9 "$victim"
    run "$RL" --permits 2 --wait 10s dead -- sh -c 'echo "$REDLOCK_PERMIT"'
    assert_success
    # The dead holder's permit, while the other holder still holds its own: nobody released
    # anything, so only the TTL's end can have freed it. (No bound on the time: a sanitizer
    # pass on a loaded machine once took over 3s.)
    assert_output "$victim_permit"
    kill -0 "${PIDS[1]}"
}

@test "a run with a different --permits gets a clear error (exit 64)" {
    gated mixed 3
    wait_for 5 lines_are "$BATS_TEST_TMPDIR/permits" 1
    run "$RL" --permits 2 mixed -- true
    assert_failure 64
    assert_output --partial "lock 'mixed' is held with --permits 3, not 2"
    run "$RL" mixed -- true
    assert_failure 64
    assert_output --partial "is held with --permits 3, not 1"
    touch "$BATS_TEST_TMPDIR/go"
    wait "${PIDS[0]}"
    PIDS=()
    # Held as a plain lock: a permits run says so too.
    "$RL" plain -- sh -c "while [ ! -e '$BATS_TEST_TMPDIR/stop' ]; do sleep 0.02; done" &
    PIDS+=($!)
    wait_for 5 key_exists plain
    run "$RL" --permits 3 plain -- true
    assert_failure 64
    assert_output --partial "is held as a plain lock"
}

@test "--permits 1 keeps the plain lock's key format: GET NAME returns the token" {
    run "$RL" --permits 1 plain1 -- sh -c 'redis-cli -p "$0" GET plain1; echo "$REDLOCK_TOKEN $REDLOCK_PERMIT"' "$REDIS_PORT"
    assert_success
    [ "${lines[0]} 1" = "${lines[1]}" ]
}

@test "--permits is range-checked and read from REDLOCK_PERMITS" {
    run "$RL" --permits 0 x -- true
    assert_failure 64
    assert_output --partial "invalid value '0' for --permits: expected 1-1000"
    run "$RL" --permits 1001 x -- true
    assert_failure 64
    REDLOCK_PERMITS=2 run "$RL" envp -- sh -c 'redis-cli -p "$0" GET envp' "$REDIS_PORT"
    assert_success
    assert_output "redlock-permits/2"
}

@test "status shows every holder, list one line, release --token one holder, --force all" {
    local i
    for i in 1 2; do
        "$RL" --permits 3 --hold-info ops -- bash -c \
            'echo "$REDLOCK_TOKEN" > "$0/token.$REDLOCK_PERMIT"; g=$0/stop; '"$AWAIT" \
            "$BATS_TEST_TMPDIR" &
        PIDS+=($!)
        wait_for 5 file_exists "$BATS_TEST_TMPDIR/token.$i"
    done
    run "$RL" status ops
    assert_success
    assert_output --partial "2 of 3 held"
    assert_output --partial "permit 1:"
    assert_output --partial "permit 2:"
    run "$RL" status --json ops
    assert_success
    echo "$output" | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["permits"] == 3 and s["held_permits"] == 2, s
assert [h["permit"] for h in s["holders"]] == [1, 2], s
assert all(h["holder"]["pid"] > 0 and h["fence"] > 0 for h in s["holders"]), s'
    run "$RL" list
    assert_success
    assert_line --regexp '^ops .*2 of 3 held'
    [ "${#lines[@]}" -eq 2 ]
    run "$RL" list --json
    assert_success
    echo "$output" | python3 -c '
import json, sys
l = json.load(sys.stdin)
assert len(l) == 1 and l[0]["held_permits"] == 2, l'
    run "$RL" release ops --token nosuchtoken
    assert_failure 1
    assert_output --partial "no permit of lock 'ops' (2 of 3 held) is held by token"
    run "$RL" release ops --token "$(cat "$BATS_TEST_TMPDIR/token.1")"
    assert_success
    [ "$(cli "$REDIS_PORT" EXISTS '{ops}:permit:1')" = 0 ]
    [ "$(cli "$REDIS_PORT" GET '{ops}:permit:2')" = "$(cat "$BATS_TEST_TMPDIR/token.2")" ]
    run "$RL" release ops --force
    assert_success
    assert_output --partial "released lock 'ops' permit 2:"
    key_absent ops
    [ "$(cli "$REDIS_PORT" EXISTS '{ops}:permit:2')" = 0 ]
    # Both holders notice at their next renewal at the latest and exit 76 (lock lost).
}

@test "deleting the lock key ends every permit holder (exit 76)" {
    # 3s leases: with 600ms, a loaded CI machine once ended both leases (renewals late) before
    # the commands had started. A deleted key is found at the next renewal, a second away.
    gated gone 2 --ttl 3s
    gated gone 2 --ttl 3s
    wait_for 5 lines_are "$BATS_TEST_TMPDIR/permits" 2
    cli "$REDIS_PORT" DEL gone >/dev/null
    local p status
    for p in "${PIDS[@]}"; do
        status=0
        wait "$p" || status=$?
        [ "$status" -eq 76 ]
    done
    PIDS=()
}

@test "a nested run of the same name runs within its parent's permit" {
    run "$RL" --keep-env --permits 2 nest -- sh -c \
        'echo "$REDLOCK_PERMIT $REDLOCK_FENCE"; "$0" --permits 2 nest -- sh -c "echo \$REDLOCK_PERMIT \$REDLOCK_FENCE"; "$0" nest -- true && echo plain-nested-ok' "$RL"
    assert_success
    [ "${lines[0]}" = "${lines[1]}" ]
    assert_line plain-nested-ok
}

@test "--min-hold keeps the permit and --max-runtime frees it" {
    run "$RL" --permits 2 --min-hold 1s mh -- true
    assert_success
    [ "$(cli "$REDIS_PORT" EXISTS '{mh}:permit:1')" = 1 ]
    run "$RL" --permits 2 --max-runtime 200ms --kill-after 100ms mr -- sleep 5
    assert_failure 124
    key_absent '{mr}:permit:1'
    key_absent mr
}

@test "a permits holder's fence never goes below Redis's clock in microseconds, as a plain lock's" {
    # A counter set back (a failover to a replica that missed increments, a restart).
    cli "$REDIS_PORT" SET '{job}:fence' 5 >/dev/null
    run "$RL" --permits 2 job -- printenv REDLOCK_FENCE
    assert_success
    local clock
    clock=$(cli "$REDIS_PORT" TIME | head -1)
    [ "$output" -gt "$(((clock - 60) * 1000000))" ]
}

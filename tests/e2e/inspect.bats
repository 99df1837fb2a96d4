#!/usr/bin/env bats
# The operator commands status, list and release against a real redis-server: what they read
# from and do to real keys. How a report is shown (text and JSON) is proved over a fake inspector
# in tests/unit/inspect/inspect_commands_test.cpp, and the command line's refusals are rows of
# tests/unit/cli/refusals_test.cpp.
load helpers

setup() { redis_start; }

teardown() {
    stop_holder
    redis_stop
}

# A lock taken by some other client: a plain token with a PX expiry, no holder info.
foreign_lock() { cli "$REDIS_PORT" SET "$1" "${2:-0123456789abcdef0123456789abcdef}" PX 60000 >/dev/null; }

# ---- status ----

@test "status of a run without --hold-info names the holder but not its command line" {
    "$RL" job -- sh -c 'touch "$0/started"; while [ ! -e "$0/stop" ]; do sleep 0.05; done' \
        "$BATS_TEST_TMPDIR" >/dev/null 2>&1 3>&- &
    HOLDER_PID=$!
    wait_for 5 file_exists "$BATS_TEST_TMPDIR/started"
    run "$RL" status job
    assert_success
    assert_line --regexp "^holder: +$(id -un)@.+ pid $HOLDER_PID\$"
    assert_line --regexp '^command: +\(not recorded: the holder ran without --hold-info\)$'
    run "$RL" status job --json
    echo "$output" | jq -e --argjson pid "$HOLDER_PID" --argjson fence "$(cli "$REDIS_PORT" GET '{job}:fence')" \
        --arg token "$(cli "$REDIS_PORT" GET job)" \
        '.holder.pid == $pid and .holder.command == "" and .fence == $fence and .token == $token'
    run "$RL" release --force job
    assert_success
    assert_line --regexp "^released lock 'job' held by $(id -un)@.+ pid $HOLDER_PID \(token [0-9a-f]{8}\.\.\.\), which had .+ left$"
}

@test "status ignores holder info left behind by an earlier token" {
    foreign_lock job new-token
    cli "$REDIS_PORT" HSET '{job}:info' token old-token host gone pid 1 user x command y >/dev/null
    run "$RL" status job --json
    assert_success
    echo "$output" | jq -e '.holder == null'
}

@test "status, list and release exit 69 when Redis is unreachable and 77 when it refuses the password" {
    local sub
    for sub in "status job" list "release job --force"; do
        # shellcheck disable=SC2086 # the subcommand and its arguments, as words
        run "$RL" -u "redis://127.0.0.1:$(free_port)" --connect-timeout 1s $sub
        assert_failure 69
        assert_output --regexp '^redlock-run: .*127\.0\.0\.1'
    done
    redis_stop
    CLI_OPTS="-a secret --no-auth-warning" redis_start --requirepass secret
    REDISCLI_AUTH=wrong run "$RL" status job
    assert_failure 77
    REDISCLI_AUTH=wrong run "$RL" list
    assert_failure 77
    REDISCLI_AUTH=secret run "$RL" status job
    assert_failure 1
    REDISCLI_AUTH=secret run "$RL" list --json
    assert_success
    assert_output "[]"
}

@test "status and release --force of a key that is not a lock exit 65 and leave it" {
    cli "$REDIS_PORT" HSET notalock a b >/dev/null
    run "$RL" status notalock
    assert_failure 65
    assert_output --partial "not a lock"
    run "$RL" release notalock --force
    assert_failure 65
    key_exists notalock
}

# ---- list ----

@test "list PATTERN matches names under the prefix, whose glob characters are literal" {
    foreign_lock 'p[1]*:a'
    foreign_lock 'p[1]*:b'
    foreign_lock 'p1x:a'
    foreign_lock 'other'
    run "$RL" list --prefix 'p[1]*:' --json
    assert_success
    echo "$output" | jq -e 'map(.name) == ["a", "b"] and .[0].key == "p[1]*:a"'
    run "$RL" list --prefix 'p[1]*:' --json 'a*'
    assert_success
    echo "$output" | jq -e 'map(.name) == ["a"]'
}

# What list reads under the prefix: lock tokens only, whatever their names end in.
@test "list shows exactly the locks: not other keys, waiters' queues and marks, holder info or fences" {
    foreign_lock 'backup:fence'
    foreign_lock 'jobs:wait'
    cli "$REDIS_PORT" HSET h f v >/dev/null
    cli "$REDIS_PORT" RPUSH l x >/dev/null
    cli "$REDIS_PORT" SET '{gone}:fence' 7 >/dev/null
    hold job
    "$RL" --wait 30s job -- true 3>&- &
    local waiter=$!
    wait_for 5 key_exists '{job}:wait'
    [ -n "$(cli "$REDIS_PORT" KEYS '{job}:wake:*:alive')" ]
    key_exists '{job}:info'
    run "$RL" list --json
    kill "$waiter"; wait "$waiter" || true
    assert_success
    echo "$output" | jq -e 'map(.name) == ["backup:fence", "job", "jobs:wait"]'
}

@test "list pages through more than 1,000 keys with SCAN, never KEYS" {
    redis_stop
    redis_start --rename-command KEYS ''
    cli "$REDIS_PORT" EVAL "for i = 1, 1500 do redis.call('SET', ARGV[1] .. i, 'tok' .. i, 'PX', 120000) end
               for i = 1, 600 do redis.call('SET', 'unrelated:' .. i, 'x') end" 0 p:lock- >/dev/null
    run "$RL" list --prefix p: --json
    assert_success
    echo "$output" | jq -e 'length == 1500 and (map(.name) | . == sort) and .[0].name == "lock-1"
        and all(.[]; .key == "p:" + .name)'
    run "$RL" list --prefix p:
    assert_success
    assert_equal "${#lines[@]}" 1501
    local scans
    scans=$(cli "$REDIS_PORT" INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_scan:calls=\([0-9]*\),.*/\1/p')
    [ "$scans" -gt 2 ]
}

@test "names with spaces, colons, braces, non-ASCII bytes and newlines are listed safely" {
    foreign_lock 'a b'
    foreign_lock $'caf\xc3\xa9'
    foreign_lock $'bad\xff'
    foreign_lock $'new\nline'
    hold 'x:{y}:z'
    local close=$'a}b'
    cli "$REDIS_PORT" SET "$close" tok PX 60000 >/dev/null
    run "$RL" list
    assert_success
    assert_equal "${#lines[@]}" 7
    assert_line --index 1 --regexp '^a b '
    assert_line --index 2 --regexp '^a\}b '
    assert_line --index 3 --regexp '^bad\\xff '
    assert_line --index 4 --regexp $'^caf\xc3\xa9 '
    assert_line --index 5 --regexp '^new\\nline '
    assert_line --index 6 --regexp "^x:\\{y\\}:z .* pid $HOLDER_PID "
    run "$RL" list --json
    assert_success
    echo "$output" | jq -e '
        map(.name) == ["a b", "a}b", "bad\u00ff", "café", "new\nline", "x:{y}:z"]
        and (.[5].holder | type) == "object"'
}

@test "status and release address names with spaces, braces and non-ASCII bytes exactly" {
    foreign_lock $'bad\xff'
    hold 'x:{y}:z'
    run "$RL" status $'bad\xff'
    assert_success
    assert_line 'name:     bad\xff'
    run "$RL" status 'x:{y}:z' --json
    assert_success
    echo "$output" | jq -e '.name == "x:{y}:z" and .holder != null'
    run "$RL" release --force $'bad\xff'
    assert_success
    assert_output --partial 'bad\xff'
    key_absent $'bad\xff'
}

# ---- release ----

@test "release --token with the current token deletes the lock and wakes one waiter" {
    foreign_lock job tok
    # Two waiters as they queue themselves: tokens in the queue, each marked alive.
    cli "$REDIS_PORT" RPUSH '{job}:wait' first second >/dev/null
    cli "$REDIS_PORT" SET '{job}:wake:first:alive' 1 PX 60000 >/dev/null
    cli "$REDIS_PORT" SET '{job}:wake:second:alive' 1 PX 60000 >/dev/null
    run "$RL" release job --token tok
    assert_success
    assert_output "released lock 'job'"
    key_absent job
    # Only the head is woken; it stays queued (keeping the lock reserved) until it takes it.
    assert_equal "$(cli "$REDIS_PORT" LRANGE '{job}:wake:first' 0 -1)" 1
    key_absent '{job}:wake:second'
    assert_equal "$(cli "$REDIS_PORT" LINDEX '{job}:wait' 0)" first
}

@test "release --token with another token refuses, says who holds the lock and exits 1" {
    hold job
    run "$RL" release job --token not-the-token
    assert_failure 1
    assert_output --regexp "^redlock-run: lock 'job' is held by $(id -un)@.+ pid $HOLDER_PID .*not released$"
    key_exists job
    run "$RL" status job
    assert_success
}

@test "release --force deletes the lock and its holder info, says whose it was, and wakes one waiter" {
    hold job
    # Two waiters as they queue themselves: tokens in the queue, each marked alive.
    cli "$REDIS_PORT" RPUSH '{job}:wait' first second >/dev/null
    cli "$REDIS_PORT" SET '{job}:wake:first:alive' 1 PX 60000 >/dev/null
    cli "$REDIS_PORT" SET '{job}:wake:second:alive' 1 PX 60000 >/dev/null
    key_exists '{job}:info'
    run "$RL" release job --force
    assert_success
    assert_output --regexp "^released lock 'job' held by $(id -un)@.+ pid $HOLDER_PID \\(command 'bash -c .*token [0-9a-f]{8}\\.\\.\\.\\), which had .+ left$"
    key_absent job
    key_absent '{job}:info'
    # Only the head is woken; it stays queued (keeping the lock reserved) until it takes it.
    assert_equal "$(cli "$REDIS_PORT" LRANGE '{job}:wake:first' 0 -1)" 1
    key_absent '{job}:wake:second'
    assert_equal "$(cli "$REDIS_PORT" LINDEX '{job}:wait' 0)" first
}

@test "a waiter blocked on the lock takes it promptly after release --force" {
    hold job --ttl 60s
    "$RL" --wait 30s job -- touch "$BATS_TEST_TMPDIR/waiter-ran" >/dev/null 2>&1 3>&- &
    local waiter=$!
    wait_for 5 sh -c "redis-cli -p $REDIS_PORT CLIENT LIST | grep -q 'cmd=blpop'"
    run "$RL" release job --force
    assert_success
    wait_for 5 file_exists "$BATS_TEST_TMPDIR/waiter-ran"
    wait "$waiter"
}

# SCAN's COUNT is how many keys one call visits, matching or not, and so how long each call holds
# the server in a large keyspace; MATCH narrows what comes back to the prefix.
@test "list scans with MATCH on the prefix and at most 250 keys per call, never KEYS" {
    cli "$REDIS_PORT" EVAL "for i = 1, 3000 do redis.call('SET', 'app:' .. i, 'x') end
               for i = 1, 5 do redis.call('SET', ARGV[1] .. i, 'tok' .. i, 'PX', 120000) end" \
        0 'p[1]:job' >/dev/null
    cli "$REDIS_PORT" MONITOR > "$BATS_TEST_TMPDIR/monitor" 2>/dev/null &
    local monitor=$!
    wait_for 5 file_contains "$BATS_TEST_TMPDIR/monitor" OK
    run "$RL" list --prefix 'p[1]:' --json
    cli "$REDIS_PORT" ECHO list-done >/dev/null
    wait_for 5 file_contains "$BATS_TEST_TMPDIR/monitor" list-done
    kill "$monitor"; wait "$monitor" || true
    assert_success
    echo "$output" | jq -e 'map(.name) == ["job1", "job2", "job3", "job4", "job5"]'
    local scans
    scans=$(grep -c '"SCAN"' "$BATS_TEST_TMPDIR/monitor")
    [ "$scans" -ge 12 ]  # 3,005 keys, 250 at a time
    [ "$(grep '"SCAN"' "$BATS_TEST_TMPDIR/monitor" |
         grep -c '"MATCH" "p\\\\\[1\\\\\]:\*" "COUNT" "250"$')" = "$scans" ]
    [ "$(grep -c '"KEYS"' "$BATS_TEST_TMPDIR/monitor")" = 0 ]
}

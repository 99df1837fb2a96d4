#!/usr/bin/env bats
# Hostile or failing Redis replies: real servers in states that refuse the lock (WRONGTYPE,
# READONLY, NOAUTH, WRONGPASS, OOM) and fake servers (fake_server.py) that never answer, hang up
# half-way or answer what no Redis would. Each gives its exit code and one line, promptly, never
# runs the command, and takes or loses no lock.
load helpers
load hostile_helpers
load quorum_helpers
bats_require_minimum_version 1.5.0

setup() {
    RAN="$BATS_TEST_TMPDIR/ran"
    JOB=(job -- touch "$RAN")
    FAST=(--connect-timeout 500ms --command-timeout 500ms)
}

teardown() {
    fake_stop
    redis_stop
    [ -z "${Q_PID+x}" ] || quorum_stop
}

# fake MODE [REPLY]: starts a fake server and points REDLOCK_URL at it.
fake() {
    fake_start "$@"
    export REDLOCK_URL="redis://127.0.0.1:$FAKE_PORT"
}

# --- real servers --------------------------------------------------------------------------------

@test "WRONGTYPE: a hash at the key is not a lock, and stays" {
    redis_start
    plant_sentinel
    cli "$REDIS_PORT" HSET job field value >/dev/null
    refuse 65 "acquiring lock 'job': WRONGTYPE|key 'job' holds a" "${JOB[@]}"
    assert_equal "$(cli "$REDIS_PORT" HGET job field)" value
    cli "$REDIS_PORT" DEL job >/dev/null
    assert_untouched
}

@test "a fence counter that is not a number leaves no lock behind" {
    redis_start
    plant_sentinel
    cli "$REDIS_PORT" SET '{job}:fence' not-a-number >/dev/null
    refuse 65 "job" "${JOB[@]}"
    key_absent job
    assert_equal "$(cli "$REDIS_PORT" GET '{job}:fence')" not-a-number
}

@test "a fence counter INCR cannot raise (leading zeros, 2^62 and beyond) exits 65, nothing changed" {
    redis_start
    plant_sentinel
    for counter in 0123 00 -5 ' 7' 4611686018427387903 9223372036854775807 9223372036854775808 \
        99999999999999999999999; do
        cli "$REDIS_PORT" SET '{job}:fence' "$counter" >/dev/null
        refuse 65 "acquiring lock 'job': WRONGTYPE the fence counter \{job\}:fence" "${JOB[@]}"
        refuse 65 "fence counter" --wait 1s --hold-info "${JOB[@]}"
        assert_equal "$(cli "$REDIS_PORT" GET '{job}:fence')" "$counter"
        assert_equal "$(cli "$REDIS_PORT" DBSIZE)" 2
    done
    # The highest counter left hands out the highest fence, 2^62-1.
    cli "$REDIS_PORT" SET '{job}:fence' 4611686018427387902 >/dev/null
    run -0 "$RL" job -- sh -c 'echo "$REDLOCK_FENCE"'
    assert_output 4611686018427387903
    # That run left its fence counter and its ledger entry (--ledger-size defaults to 100).
    cli "$REDIS_PORT" DEL '{job}:fence' '{job}:ledger' >/dev/null
    assert_untouched
}

@test "a fence outside 1..2^62-1 from a server is refused with 65, never given to the command" {
    for fence in -5 0 4611686018427387904 9223372036854775807; do
        fake reply "*2\r\n:1\r\n:$fence\r\n"
        refuse 65 "lock 'job': fence $fence is outside 1..2\\^62-1" "${FAST[@]}" "${JOB[@]}"
        fake_stop
    done
}

@test "a holder TTL of 2^63-1 ms or of 3000 years does not overflow the wait" {
    fake reply '*2\r\n:0\r\n:9223372036854775807\r\n'
    refuse 75 "lock 'job' is held by an unknown holder, expires in 878400h" "${FAST[@]}" "${JOB[@]}"
    fake_stop
    redis_start
    cli "$REDIS_PORT" SET job x PX 100000000000000 >/dev/null
    rl_start --wait forever job -- touch "$RAN"
    wait_for 5 key_exists '{job}:wait'
    run -0 timeout -s KILL 10 "$RL" release --force job
    wait_for 5 file_exists "$RAN"
    wait "$RL_PID"
}

@test "a status reply with TIME and PTTL at 2^63-1 is read without overflow" {
    fake reply '*6\r\n$6\r\nstring\r\n$3\r\ntok\r\n:9223372036854775807\r\n$19\r\n9223372036854775807\r\n$19\r\n9223372036854775807\r\n:999999\r\n'
    run --separate-stderr timeout -s KILL 10 "$RL" "${FAST[@]}" status --json job
    assert_equal "$status" 0
    [[ "$output" == *'"fence":null'* ]]
    [[ "$output" == *'"redis_time_ms":999'[,}]* ]]
}

@test "READONLY: a replica refuses the acquire with 69" {
    redis_start
    plant_sentinel
    cli "$REDIS_PORT" REPLICAOF 127.0.0.1 "$(free_port)" >/dev/null
    refuse 69 "acquiring lock 'job': READONLY" "${JOB[@]}"
    cli "$REDIS_PORT" REPLICAOF NO ONE >/dev/null
    assert_untouched
}

@test "NOAUTH: no password for a server that wants one" {
    CLI_OPTS="-a pw --no-auth-warning" redis_start --requirepass pw
    CLI_OPTS="-a pw --no-auth-warning"
    plant_sentinel
    refuse 77 "NOAUTH" "${JOB[@]}"
    assert_untouched
}

@test "WRONGPASS: a wrong password, and a wrong ACL user" {
    CLI_OPTS="-a pw --no-auth-warning" redis_start --requirepass pw
    CLI_OPTS="-a pw --no-auth-warning"
    plant_sentinel
    REDISCLI_AUTH=nope refuse 77 "refused authentication: WRONGPASS" "${JOB[@]}"
    REDLOCK_URL="redis://nobody:pw@127.0.0.1:$REDIS_PORT" refuse 77 "refused authentication: WRONGPASS" "${JOB[@]}"
    assert_untouched
}

@test "OOM: maxmemory 1mb with noeviction refuses the acquire with 69 and writes nothing" {
    redis_start --maxmemory-policy noeviction
    plant_sentinel
    head -c 2000000 /dev/zero | tr '\0' f | cli "$REDIS_PORT" -x SET filler >/dev/null
    cli "$REDIS_PORT" CONFIG SET maxmemory 1mb >/dev/null
    refuse 69 "acquiring lock 'job': OOM" "${JOB[@]}"
    refuse 69 "OOM" --hold-info --wait 1s "${JOB[@]}"
    cli "$REDIS_PORT" CONFIG SET maxmemory 0 >/dev/null
    cli "$REDIS_PORT" DEL filler >/dev/null
    assert_untouched
}

@test "a database the server does not have, and a server that is gone" {
    redis_start
    plant_sentinel
    refuse 64 "cannot select database 99999" -u "$REDIS_URL/99999" "${JOB[@]}"
    refuse 69 "cannot connect to Redis at 127.0.0.1:[0-9]+" -u "redis://127.0.0.1:$(free_port)" "${JOB[@]}"
    assert_untouched
}

# --- fake servers --------------------------------------------------------------------------------

@test "a server that accepts and never answers: 69 after --command-timeout" {
    fake silent
    # Every other bound on the wait is 300s (the environment's timeouts, which the options
    # override), far past refuse's kill (10s, 60s under a sanitizer): a 69 at all is the 500ms of
    # --command-timeout at work, with no wall-clock bound of the test's own to miss under load.
    export REDLOCK_COMMAND_TIMEOUT=300s REDLOCK_CONNECT_TIMEOUT=300s
    refuse 69 "Redis at 127.0.0.1:$FAKE_PORT timed out while waiting for a reply$" "${FAST[@]}" "${JOB[@]}"
}

@test "a server that never answers the AUTH: 69 after --connect-timeout" {
    fake silent
    REDISCLI_AUTH=secret refuse 69 "timed out" "${FAST[@]}" "${JOB[@]}"
    refute_output --partial secret
}

@test "a server that never answers status, list or release" {
    fake silent
    refuse 69 "timed out" "${FAST[@]}" status job
    refuse 69 "timed out" "${FAST[@]}" list
    refuse 69 "timed out" "${FAST[@]}" release --force job
}

@test "a server that closes the connection in the middle of a reply" {
    fake close-mid
    refuse 69 "Redis at 127.0.0.1:$FAKE_PORT closed the connection$" "${FAST[@]}" "${JOB[@]}"
    refuse 69 "closed the connection$" "${FAST[@]}" status job
}

@test "a server that is not Redis and answers garbage (an HTTP error page)" {
    fake garbage
    refuse 69 "protocol error from Redis at 127.0.0.1:$FAKE_PORT: Protocol error, got \"H\" as reply type byte \\(is this a Redis server\\? the port answered with 'HTTP/1.1 400 Bad Request'\\)$" \
        "${FAST[@]}" "${JOB[@]}"
    refuse 69 "protocol error" "${FAST[@]}" status job
    refuse 69 "protocol error" "${FAST[@]}" release --token t job
}

@test "a reply nested deeper than any Redis reply" {
    fake reply '*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n'
    refuse 69 "protocol error from Redis .*depth" "${FAST[@]}" "${JOB[@]}"
}

@test "a negative bulk length, a negative array length and an integer beyond 64 bits" {
    fake reply '$-5\r\n'
    refuse 69 "protocol error from Redis .*length out of range$" "${FAST[@]}" "${JOB[@]}"
    fake_stop
    fake reply '*-2\r\n'
    refuse 69 "protocol error from Redis .*length out of range$" "${FAST[@]}" "${JOB[@]}"
    fake_stop
    fake reply ':99999999999999999999999\r\n'
    refuse 69 "protocol error from Redis .*Bad integer value$" "${FAST[@]}" "${JOB[@]}"
}

@test "a bulk string announced as 2 GB that never comes: a timeout, not an allocation" {
    fake reply '$2147483647\r\n'
    refuse 69 "timed out while waiting for a reply$" "${FAST[@]}" "${JOB[@]}"
}

@test "a bulk string of 900 GB that keeps streaming is cut at 64 MiB: 69, not 840 MB of memory" {
    fake stream '$900000000000\r\n'
    refuse 69 "protocol error from Redis at 127.0.0.1:$FAKE_PORT: a reply of more than 64 MiB" \
        --connect-timeout 500ms --command-timeout 8s "${JOB[@]}"
    fake_stop
    fake stream '*2\r\n:1\r\n$900000000000\r\n'
    refuse 69 "a reply of more than 64 MiB" --command-timeout 8s status job
}

@test "a RESP3 map to a RESP2 client" {
    fake reply '%1\r\n:1\r\n:1\r\n'
    refuse 69 "protocol error from Redis .*got \"%\" as reply type byte$" "${FAST[@]}" "${JOB[@]}"
}

@test "an error reply no Redis sends maps to 70 and is quoted" {
    fake reply '-ERR something odd\r\n'
    refuse 70 "acquiring lock 'job': ERR something odd$" "${FAST[@]}" "${JOB[@]}"
}

@test "an error reply of 100 KB with control characters is one short escaped line" {
    fake reply "-ERR \\x1b[2J$(head -c 100000 /dev/zero | tr '\0' e)\\x07\\r\\n"
    refuse 70 "acquiring lock 'job': ERR \\\\x1b\\[2Je+\\.\\.\\.\\([0-9]+ bytes\\)$" "${FAST[@]}" "${JOB[@]}"
    [ "${#stderr}" -le 4200 ]
}

@test "failover and cluster errors (MOVED, LOADING, MASTERDOWN, BUSY) are 69" {
    local err
    for err in 'MOVED 3999 127.0.0.1:6381' 'LOADING Redis is loading' 'MASTERDOWN Link is down' \
        'BUSY Redis is busy running a script'; do
        fake reply "-$err\\r\\n"
        refuse 69 "acquiring lock 'job': ${err%% *}" "${FAST[@]}" "${JOB[@]}"
        fake_stop
    done
}

@test "NOAUTH and NOPERM from a fake server are 77" {
    fake reply '-NOAUTH Authentication required.\r\n'
    refuse 77 "NOAUTH Authentication required" "${FAST[@]}" "${JOB[@]}"
    fake_stop
    fake reply '-NOPERM no\r\n'
    refuse 77 "NOPERM" "${FAST[@]}" "${JOB[@]}"
}

@test "an acquire answered with the wrong shape: an integer, nils, a string, an empty array" {
    local r
    for r in ':1\r\n' '*2\r\n$-1\r\n$-1\r\n' '*2\r\n:1\r\n$3\r\nabc\r\n' '*0\r\n' '+OK\r\n' '$-1\r\n'; do
        fake reply "$r"
        refuse 70 "unexpected reply from the acquire script: .* where (an integer|an array of two|a fence) belongs" \
            "${FAST[@]}" "${JOB[@]}"
        fake_stop
    done
}

@test "status and list answered with the wrong shape are 70" {
    fake reply ':1\r\n'
    refuse 70 "unexpected reply from the status script$" "${FAST[@]}" status job
    refuse 70 "unexpected reply to SCAN$" "${FAST[@]}" list
}

@test "a server that turns to garbage after the acquire: the lock is declared lost, 76" {
    fake acquire-then 'garbage\r\n'
    # A 2s lease: with 300ms, a supervisor slowed by a sanitizer pass on a loaded machine once
    # missed its 15ms lead, and the watchdog's SIGKILL line came first. Either stops the
    # command; what must show is the lost lock, in some line, and exit 76.
    run --separate-stderr timeout -s KILL 20 "$RL" "${FAST[@]}" --ttl 2s job -- sh -c 'sleep 10; touch "$0"' "$RAN"
    [ "$status" = 76 ] || { echo "exit $status; stderr: $stderr" >&2; false; }
    printf '%s\n' "${stderr_lines[@]}" |
        grep -q "^redlock-run: lock 'job' lost: no renewal succeeded in time" ||
        { echo "no lost line; stderr: $stderr" >&2; false; }
    # The release and the record then fail too, as a consequence of the same fault: not news
    # (they were two more lines after the loss).
    ! printf '%s\n' "${stderr_lines[@]}" | grep -q "could not release\|could not record" ||
        { echo "a consequence reported; stderr: $stderr" >&2; false; }
    [ ! -e "$RAN" ]
}

@test "an array header of two billion elements is refused before hiredis allocates 16 GB" {
    fake reply '*2000000000\r\n'
    refuse 69 "protocol error from Redis at 127.0.0.1:$FAKE_PORT: an array of 2000000000 elements, more than any reply can have here \\(1048576\\)$" \
        "${FAST[@]}" "${JOB[@]}"
    fake_stop
    fake reply '*1\r\n*1048577\r\n'
    refuse 69 "an array of 1048577 elements" "${FAST[@]}" status job
}

@test "quorum: a node lying with fence 2^63-1 is outvoted; honest counters at the limit give 65" {
    quorum_start 2
    fake_start reply '*2\r\n:1\r\n:9223372036854775807\r\n'
    export REDLOCK_URL="$QUORUM_URL,redis://127.0.0.1:$FAKE_PORT" REDLOCK_NODE_TIMEOUT=200ms
    run --separate-stderr timeout -s KILL 10 "$RL" job -- sh -c 'echo "$REDLOCK_FENCE"'
    assert_equal "$status" 0
    [ "$output" -gt 0 ] && [ "$output" -lt 4611686018427387904 ]
    assert_equal "$(cli "${Q_PORT[0]}" GET '{job}:fence')" "$output"
    # Counters a lying node could have raised: every run says why, with 65, and writes nothing.
    cli "${Q_PORT[0]}" SET '{job}:fence' 9223372036854775807 >/dev/null
    cli "${Q_PORT[1]}" SET '{job}:fence' 4611686018427387903 >/dev/null
    refuse 65 "fence counter \\{job\\}:fence .*limit of fences" "${JOB[@]}"
    assert_equal "$(cli "${Q_PORT[0]}" EXISTS job)$(cli "${Q_PORT[1]}" EXISTS job)" 00
    # One below the limit on a node: the quorum's fence, one above, would reach it.
    cli "${Q_PORT[0]}" SET '{job}:fence' 4611686018427387902 >/dev/null
    cli "${Q_PORT[1]}" SET '{job}:fence' 4611686018427387902 >/dev/null
    refuse 65 "fence 4611686018427387904 is outside" "${JOB[@]}"
    assert_equal "$(cli "${Q_PORT[0]}" EXISTS job)$(cli "${Q_PORT[1]}" EXISTS job)" 00
}

@test "cluster: a MOVED for another slot than the key's is not followed to the node it names" {
    redis_start
    plant_sentinel
    # The run's first write is the acquire and CLUSTER SLOTS (the map: every slot on the fake);
    # every acquire is answered with a MOVED for slot 1.
    fake_start script "-MOVED 1 127.0.0.1:$REDIS_PORT\r\n|*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n\$9\r\n127.0.0.1\r\n:PORT\r\n|-MOVED 1 127.0.0.1:$REDIS_PORT\r\n"
    refuse 69 "node 127.0.0.1:$FAKE_PORT redirected EVAL for slot 1, but its key is in slot 2906; not following it" \
        -u "redis-cluster://127.0.0.1:$FAKE_PORT" "${JOB[@]}"
    assert_untouched
}

@test "a sentinel naming port 99999 or -31073 is refused, not cut to 16 bits" {
    for port in 99999 -31073; do
        fake reply "*2\r\n\$9\r\n127.0.0.1\r\n\$${#port}\r\n$port\r\n"
        refuse 69 "no sentinel could tell where master 'mymaster' is: the sentinel at 127.0.0.1:$FAKE_PORT gave port $port, not 1-65535$" \
            "${FAST[@]}" -u "redis-sentinel://127.0.0.1:$FAKE_PORT/mymaster" "${JOB[@]}"
        fake_stop
    done
}

@test "C1 control characters in a server's error (0x9b raw, C2 9B in UTF-8) are escaped" {
    fake reply '-ERR a\x9b31mb\xc2\x9b32mc caf\xc3\xa9\r\n'
    refuse 70 'ERR a\\x9b31mb\\xc2\\x9b32mc café$' "${FAST[@]}" "${JOB[@]}"
}

@test "a Redis older than 6.0.6 is named as such with exit 69, not a raw Lua error and 70" {
    local lua_error='-ERR Error running script (call to f_0): @user_script:66: @user_script: 66: Unknown Redis command called from Lua script\r\n'
    # INFO's bulk reply: 32 bytes once the fake decodes the escapes.
    local info='$32\r\n# Server\r\nredis_version:5.0.14\r\n\r\n'
    # FAKE_PORT is the fake started just before.
    refuse_old() {
        refuse 69 "Redis at 127\\.0\\.0\\.1:$FAKE_PORT is version 5\\.0\\.14; redlock-run needs Redis 6\\.0\\.6 or later \\(the acquire script uses LPOS\\)$" "${FAST[@]}" "${JOB[@]}"
    }
    # A server this user's runs never ran a script on: the acquire goes with its body at once.
    fake script "$lua_error|$info"
    refuse_old
    fake_stop
    # Without a memory of the servers (no cache directory), the digest goes first: the NOSCRIPT,
    # then the body.
    fake script "-NOSCRIPT No matching script.\r\n|$lua_error|$info"
    XDG_CACHE_HOME=/nonexistent/none refuse_old
    fake_stop
}

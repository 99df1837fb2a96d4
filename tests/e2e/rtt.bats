#!/usr/bin/env bats
# Redis far away: real redis-servers behind a proxy that holds every byte for a while in each
# direction (delay_proxy.py), so that each round trip costs at least twice that. The delay is a
# floor, never a ceiling: a loaded machine only makes the nodes later, which these tests allow.
load helpers
load quorum_helpers
bats_require_minimum_version 1.5.0

setup() {
    quorum_start 3
    DELAY_PIDS=()
}
teardown() {
    local pid
    for pid in "${DELAY_PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    quorum_stop
    redis_stop
}

# far_quorum MS: a delaying proxy of MS each way in front of every node; sets FAR_URL.
far_quorum() {
    local i port_file urls=""
    for i in "${!Q_PORT[@]}"; do
        port_file="$BATS_TEST_TMPDIR/delay.$i.port"
        /usr/bin/python3 "$BATS_TEST_DIRNAME/delay_proxy.py" "$port_file" "${Q_PORT[i]}" "$1" 3>&- &
        DELAY_PIDS+=($!)
        wait_for 5 file_exists "$port_file"
        urls+="${urls:+,}redis://127.0.0.1:$(cat "$port_file")"
    done
    FAR_URL=$urls
}

@test "a quorum acquire that every node answers too late leaves no lock behind, whatever the cache" {
    # The acquire script cached on every node (an earlier run close by), the give-back's not:
    # the state after a SCRIPT FLUSH and one run, or on servers that only ever saw runs succeed.
    run -0 "$RL" -u "$QUORUM_URL" --node-timeout 400ms warm -- true
    far_quorum 100
    # A 200 ms round trip against a 50 ms node timeout: every acquire reaches its node and takes
    # the key, and every answer comes too late to count.
    run -69 "$RL" -u "$FAR_URL" --node-timeout 50ms -t 60s far -- touch "$BATS_TEST_TMPDIR/ran"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    # Gone when the run has exited, not in 60 seconds.
    q_nothing_left far
    # And the message says what to change, with the time a round trip took.
    assert_output --regexp "answers, but later than --node-timeout 50ms allows: a round trip there took [0-9][0-9.]*m?s .*raise --node-timeout"
}

@test "a distant quorum runs with the default node timeout, raised to follow its round trip" {
    far_quorum 100
    # A 200 ms round trip against the default 50 ms: the first attempt answers too late and is
    # given back, the next one runs with three times the round trip measured (at most a tenth
    # of the ttl).
    run -0 "$RL" -u "$FAR_URL" -v -t 60s distant -- touch "$BATS_TEST_TMPDIR/ran"
    [ -e "$BATS_TEST_TMPDIR/ran" ]
    assert_output --partial "(--node-timeout not given)"
    q_nothing_left distant
}

@test "a node timeout given is kept, and a round trip beyond a tenth of the ttl is not followed" {
    far_quorum 100
    run -69 "$RL" -u "$FAR_URL" --node-timeout 50ms -t 60s given -- touch "$BATS_TEST_TMPDIR/ran"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    # A tenth of 1s is 100ms, below the 200 ms round trip: the message names --node-timeout.
    run -69 "$RL" -u "$FAR_URL" -t 1s capped -- touch "$BATS_TEST_TMPDIR/ran"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    assert_output --partial "raise --node-timeout above that"
    q_nothing_left given
    q_nothing_left capped
}

@test "a quorum give-back reaches nodes whose script cache is empty" {
    far_quorum 100
    local i
    for i in 0 1 2; do cli "${Q_PORT[$i]}" SCRIPT FLUSH >/dev/null; done
    # The acquire itself now needs two round trips (EVALSHA, then EVAL), so it cannot count
    # either; whatever it took is given back.
    run -69 "$RL" -u "$FAR_URL" --node-timeout 50ms -t 60s cold -- touch "$BATS_TEST_TMPDIR/ran"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    q_nothing_left cold
}

@test "on a server whose script cache was flushed, one NOSCRIPT is enough for the whole run" {
    local log="$BATS_TEST_TMPDIR/monitor" mon
    # A server this user's runs used, whose cache was emptied since (a restart, a failover).
    run -0 "$RL" -u "redis://127.0.0.1:${Q_PORT[0]}" before -- true
    cli "${Q_PORT[0]}" SCRIPT FLUSH >/dev/null
    cli "${Q_PORT[0]}" MONITOR >"$log" 2>/dev/null 3>&- &
    mon=$!
    wait_for 5 sh -c "redis-cli -p ${Q_PORT[0]} PING >/dev/null && grep -q PING '$log'"
    run -0 "$RL" -u "redis://127.0.0.1:${Q_PORT[0]}" coldrun -- true
    cli "${Q_PORT[0]}" ECHO coldrun-done >/dev/null
    wait_for 5 grep -q coldrun-done "$log"
    kill "$mon"
    wait "$mon" 2>/dev/null || true
    # The acquire: EVALSHA, NOSCRIPT, EVAL. The ledger's step at the end, on the same server:
    # sent with its body at once, not asked for by digest first.
    [ "$(grep -v '\[0 lua\]' "$log" | grep -c '"EVALSHA"')" -eq 1 ]
    [ "$(grep -v '\[0 lua\]' "$log" | grep -c '"EVAL"')" -eq 2 ]
}

@test "the first run on a server with an empty script cache is two round trips, and so is the next" {
    cli "${Q_PORT[0]}" SCRIPT FLUSH >/dev/null
    counting_proxy "${Q_PORT[0]}"
    # No run of this user's used the server: the acquire goes with its body in the first write,
    # the release with its record in the second (3 when the acquire was sent by digest first).
    run -0 "$RL" -u "redis://127.0.0.1:$PROXY_PORT" first -- true
    [ "$(turns)" -eq 2 ]
    run -0 "$RL" -u "redis://127.0.0.1:$PROXY_PORT" first -- true
    [ "$(turns)" -eq 4 ]
    # The second went by digest: the memory said the server had the scripts, and it had.
    [ "$(cli "${Q_PORT[0]}" INFO commandstats | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\),.*/\1/p')" -ge 1 ]
    [ -z "$(cli "${Q_PORT[0]}" INFO errorstats | grep NOSCRIPT)" ]
    # A server whose cache was emptied since costs one round trip more, once.
    cli "${Q_PORT[0]}" SCRIPT FLUSH >/dev/null
    run -0 "$RL" -u "redis://127.0.0.1:$PROXY_PORT" first -- true
    [ "$(turns)" -eq 7 ]
    run -0 "$RL" -u "redis://127.0.0.1:$PROXY_PORT" first -- true
    [ "$(turns)" -eq 9 ]
}

@test "nodes that never answer in time: the message names --node-timeout even when unmeasured" {
    local i port_file urls="redis://127.0.0.1:${Q_PORT[0]}"
    # Two nodes that accept and read but never answer: no round trip can be measured there.
    for i in 1 2; do
        port_file="$BATS_TEST_TMPDIR/silent.$i.port"
        /usr/bin/python3 "$BATS_TEST_DIRNAME/fake_server.py" silent "$port_file" 3>&- &
        DELAY_PIDS+=($!)
        wait_for 5 file_exists "$port_file"
        urls+=",redis://127.0.0.1:$(cat "$port_file")"
    done
    run -69 "$RL" -u "$urls" --node-timeout 50ms --connect-timeout 300ms --command-timeout 300ms \
        silent -- touch "$BATS_TEST_TMPDIR/ran"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    assert_output --partial "timed out"
    assert_output --partial "(--node-timeout 50ms bounds each node's connect and command)"
    q_nothing_left silent
}

# counting_proxy PORT: a proxy with no delay in front of PORT that counts round trips
# (delay_proxy.py's turns); sets PROXY_PORT and TURNS (the file with the count).
counting_proxy() {
    local port_file="$BATS_TEST_TMPDIR/count.$1.port"
    TURNS="$BATS_TEST_TMPDIR/count.$1.turns"
    /usr/bin/python3 "$BATS_TEST_DIRNAME/delay_proxy.py" "$port_file" "$1" 0 "$TURNS" 3>&- &
    DELAY_PIDS+=($!)
    wait_for 5 file_exists "$port_file"
    PROXY_PORT=$(cat "$port_file")
}

turns() { cat "$TURNS" 2>/dev/null || echo 0; }

@test "status with a password and a database is one round trip, set-up included" {
    cli "${Q_PORT[0]}" ACL SETUSER rtt on '>pw' '~*' '&*' '+@all' >/dev/null
    run -0 "$RL" -u "redis://rtt:pw@127.0.0.1:${Q_PORT[0]}/2" -t 60s --ledger-size 5 st -- true
    cli "${Q_PORT[0]}" -n 2 SET st someone-else PX 60000 >/dev/null
    # The scripts cached (a cold cache costs one more round trip: their bodies).
    run -0 "$RL" -u "redis://rtt:pw@127.0.0.1:${Q_PORT[0]}/2" status st
    counting_proxy "${Q_PORT[0]}"
    run -0 "$RL" -u "redis://rtt:pw@127.0.0.1:$PROXY_PORT/2" status st
    assert_output --partial "holder:   unknown"
    assert_output --partial "last run:"
    # AUTH, SELECT, the lock, the eviction policy, the waiters and the last runs in one write
    # (each of the four reads in its own round trip after the set-up's made 5).
    [ "$(turns)" -eq 1 ]
    # A cache emptied: the three scripts' bodies follow in one more write, not one each.
    cli "${Q_PORT[0]}" SCRIPT FLUSH >/dev/null
    run -0 "$RL" -u "redis://rtt:pw@127.0.0.1:$PROXY_PORT/2" status st
    [ "$(turns)" -eq 3 ]
}

@test "a run with a password and a database is two round trips, set-up included" {
    cli "${Q_PORT[0]}" ACL SETUSER rtt on '>pw' '~*' '&*' '+@all' >/dev/null
    # The scripts cached (a cold cache costs one more round trip: the acquire's body).
    run -0 "$RL" -u "redis://rtt:pw@127.0.0.1:${Q_PORT[0]}/2" warm -- true
    counting_proxy "${Q_PORT[0]}"
    run -0 "$RL" -u "redis://rtt:pw@127.0.0.1:$PROXY_PORT/2" job -- true
    # AUTH, SELECT and the acquire in one write, then the release with the run's record (3 with
    # the acquire sent after the set-up's answers).
    [ "$(turns)" -eq 2 ]
    assert_equal "$(cli "${Q_PORT[0]}" -n 2 EXISTS job)" 0
}

@test "status over a quorum is one round trip per node" {
    local i urls="" total=0 turn_files=()
    run -0 "$RL" -u "$QUORUM_URL" -t 60s --ledger-size 5 qst -- true
    # The scripts cached on every node (a cold cache costs one more round trip: their bodies).
    run -1 "$RL" -u "$QUORUM_URL" status qst
    for i in 0 1 2; do
        counting_proxy "${Q_PORT[i]}"
        turn_files+=("$TURNS")
        urls+="${urls:+,}redis://127.0.0.1:$PROXY_PORT"
    done
    run -1 "$RL" -u "$urls" status qst
    assert_output --partial "last run:"
    # The lock, its last runs and its waiters in one write to each node (three round trips
    # each before).
    for i in 0 1 2; do total=$((total + $(cat "${turn_files[i]}" 2>/dev/null || echo 0))); done
    [ "$total" -eq 3 ]
}

@test "list on a server whose script cache was flushed sends the bodies for all its locks at once" {
    local i
    for i in 1 2 3 4; do cli "${Q_PORT[0]}" SET "cold$i" someone-else PX 60000 >/dev/null; done
    counting_proxy "${Q_PORT[0]}"
    # A server none of this test's runs used: SCAN, then the four reads with the script's body.
    run -0 "$RL" -u "redis://127.0.0.1:$PROXY_PORT" list 'cold*'
    assert_line --partial cold4
    [ "$(turns)" -eq 2 ]
    # Its cache emptied since: SCAN, the four reads by digest, the four again with the body: one
    # round trip each (7 before: the first lock's EVALSHA and EVAL, then one EVAL per lock).
    cli "${Q_PORT[0]}" SCRIPT FLUSH >/dev/null
    run -0 "$RL" -u "redis://127.0.0.1:$PROXY_PORT" list 'cold*'
    assert_line --partial cold4
    [ "$(turns)" -eq 5 ]
}

cluster_ok() { [[ "$(cli "$1" CLUSTER INFO)" == *cluster_state:ok* ]]; }

@test "a run over Cluster whose seed serves the lock is two round trips, the slot map included" {
    # A one-master cluster behind a counting proxy, announcing the proxy's port: the slot map
    # leads back through it.
    redis_start --cluster-enabled yes --cluster-config-file "$BATS_TEST_TMPDIR/nodes.conf"
    counting_proxy "$REDIS_PORT"
    cli "$REDIS_PORT" CONFIG SET cluster-announce-port "$PROXY_PORT" >/dev/null
    cli "$REDIS_PORT" CLUSTER ADDSLOTSRANGE 0 16383 >/dev/null
    wait_for 10 cluster_ok "$REDIS_PORT"
    # The scripts cached first (a cold cache costs one more round trip: the acquire's body).
    run -0 "$RL" -u "redis-cluster://127.0.0.1:$PROXY_PORT" warm -- true
    local before
    before=$(turns)
    run -0 "$RL" -u "redis-cluster://127.0.0.1:$PROXY_PORT" job -- echo ran
    assert_output ran
    # The acquire and CLUSTER SLOTS in one write, then the release with the run's record (3
    # with the slot map read before the acquire).
    [ "$(($(turns) - before))" -eq 2 ]
    assert_equal "$(cli "$REDIS_PORT" EXISTS job)" 0
}

@test "status, list, history and release over a distant quorum hear every node without --node-timeout" {
    run -0 "$RL" -u "$QUORUM_URL" -t 60s --ledger-size 5 farst -- true
    local i
    # A node whose fence step was still under way when the release began is not waited for (a
    # node frozen since the acquire must not hold a run up), so on a loaded machine its key can
    # outlive the run (ci32): this test is about reads, so the lock starts free on every node.
    for i in 0 1 2; do cli "${Q_PORT[i]}" DEL farst >/dev/null; done
    for i in 0 1 2; do cli "${Q_PORT[i]}" SET farheld someone-else PX 60000 >/dev/null; done
    far_quorum 100
    # A 200 ms round trip against the default node timeout of 50 ms: the operator commands decide
    # no lock's validity, so they wait for each node as a single node's status does.
    run -1 "$RL" -u "$FAR_URL" status farst
    assert_output --partial "(3 of 3 nodes answered)"
    refute_output --partial "timed out"
    run -0 "$RL" -u "$FAR_URL" list 'far*'
    assert_line --partial farheld
    run -0 "$RL" -u "$FAR_URL" history farst
    assert_output --partial ran
    run -0 "$RL" -u "$FAR_URL" release --force farheld
    q_nothing_left farheld
    # Given, the node timeout is kept, and a node that answers after it says what to change.
    run "$RL" -u "$FAR_URL" --node-timeout 50ms status farst
    assert_output --partial "--node-timeout 50ms bounds each node's connect and command"
}

@test "list --last-runs costs the round trips that list does" {
    local i plain
    # Three locks that ran and are free now (a ledger, no key), two held by someone with one.
    for i in 1 2 3; do run -0 "$RL" -u "redis://127.0.0.1:${Q_PORT[0]}" "lr$i" -- true; done
    run -0 "$RL" -u "redis://127.0.0.1:${Q_PORT[0]}" lr4 -- true
    run -0 "$RL" -u "redis://127.0.0.1:${Q_PORT[0]}" lr5 -- true
    cli "${Q_PORT[0]}" SET lr4 someone-else PX 60000 >/dev/null
    cli "${Q_PORT[0]}" SET lr5 someone-else PX 60000 >/dev/null
    # The scripts cached.
    run -0 "$RL" -u "redis://127.0.0.1:${Q_PORT[0]}" list --last-runs 'lr*'
    counting_proxy "${Q_PORT[0]}"
    run -0 "$RL" -u "redis://127.0.0.1:$PROXY_PORT" list 'lr*'
    assert_line --partial lr5
    plain=$(turns)
    run -0 "$RL" -u "redis://127.0.0.1:$PROXY_PORT" list --last-runs 'lr*'
    assert_line --partial lr1
    assert_line --regexp "^lr5 .* ran, exit 0"
    # The SCAN for the ledgers beside the one for the keys, and each lock's last runs in the
    # same write as its state (before: one more SCAN, one read of the free locks' states and one
    # round trip per lock, 2 + 7 here).
    [ "$(($(turns) - plain))" -eq "$plain" ]
}

# monitor_start PORT: MONITOR of the server on PORT into $MON_LOG (its pid in MON_PID), once it
# sees commands; monitor_stop waits until it has seen everything sent before it.
monitor_start() {
    MON_LOG=$(mktemp "$BATS_TEST_TMPDIR/monitor.XXXXXX") MON_PORT=$1
    # redis-cli itself, not through cli (a subshell): the kill below must reach it.
    redis-cli -h 127.0.0.1 -p "$1" MONITOR >"$MON_LOG" 2>/dev/null 3>&- &
    MON_PID=$!
    wait_for 5 sh -c "redis-cli -p $1 PING >/dev/null && grep -q PING '$MON_LOG'"
}
monitor_stop() {
    cli "$MON_PORT" ECHO monitor-done >/dev/null
    wait_for 5 grep -q monitor-done "$MON_LOG"
    kill "$MON_PID"
    wait "$MON_PID" 2>/dev/null || true
}
# client_count WORD: how many of the commands the clients sent (not the scripts) are WORD.
client_count() { grep -av '\[0 lua\]' "$MON_LOG" | grep -ac "\"$1\"" || true; }

# emptied_while_held PORT NAME OPTIONS...: a run that holds NAME while its server's script cache
# is emptied and its connection cut (a restart that kept the data: persistence, or a replica
# promoted), then ends; the commands its release sent are in $MON_LOG.
emptied_while_held() {
    local port=$1 name=$2 addr pid
    shift 2
    # The scripts cached, as on a server that has served runs before.
    run -0 "$RL" -u "redis://127.0.0.1:$port" "$@" "$name" -- true
    rm -f "$BATS_TEST_TMPDIR/started" "$BATS_TEST_TMPDIR/go"
    "$RL" -u "redis://127.0.0.1:$port" -t 60s "$@" "$name" -- sh -c "touch '$BATS_TEST_TMPDIR/started'; \
        while [ ! -e '$BATS_TEST_TMPDIR/go' ]; do sleep 0.05; done" 3>&- &
    pid=$!
    wait_for 10 file_exists "$BATS_TEST_TMPDIR/started"
    cli "$port" SCRIPT FLUSH >/dev/null
    addr=$(cli "$port" CLIENT LIST | grep -E ' cmd=eval(sha)? ' | sed 's/.* addr=\([^ ]*\) .*/\1/')
    [ -n "$addr" ]
    cli "$port" CLIENT KILL ADDR "$addr" >/dev/null
    monitor_start "$port"
    touch "$BATS_TEST_TMPDIR/go"
    wait "$pid"
    monitor_stop
}

@test "a server whose script cache was emptied while the lock was held gets the release's body at once" {
    local mode
    for mode in "" "--permits 2" "--shared"; do
        # shellcheck disable=SC2086
        emptied_while_held "${Q_PORT[0]}" "held${mode// /}" $mode
        # The release goes with its body: an EVALSHA would be answered NOSCRIPT, a round trip
        # lost before the lock is given back.
        [ "$(client_count EVALSHA)" -eq 0 ]
        [ "$(client_count EVAL)" -eq 1 ]
        assert_equal "$(cli "${Q_PORT[0]}" EXISTS "held${mode// /}")" 0
    done
}

# noscripts PORT: how many NOSCRIPT replies the server on PORT gave since its stats were reset.
noscripts() {
    cli "$1" INFO errorstats | tr -d '\r' | sed -n 's/^errorstat_NOSCRIPT:count=//p' | grep . || echo 0
}

@test "a run on a server whose script cache was flushed meets NOSCRIPT once, in every lock mode" {
    local port=${Q_PORT[0]} mode
    for mode in "" "--permits 2" "--shared"; do
        # shellcheck disable=SC2086
        run -0 "$RL" -u "redis://127.0.0.1:$port" --ledger-size 5 $mode "cold${mode// /}" -- true
        cli "$port" SCRIPT FLUSH >/dev/null
        cli "$port" CONFIG RESETSTAT >/dev/null
        # shellcheck disable=SC2086
        run -0 "$RL" -u "redis://127.0.0.1:$port" --ledger-size 5 $mode "cold${mode// /}" -- true
        # The acquire's EVALSHA; after it every script goes with its body, the release's too.
        assert_equal "$(noscripts "$port")" 1
        assert_equal "$(cli "$port" EXISTS "cold${mode// /}")" 0
    done
}

q0_exists() { [ "$(cli "${Q_PORT[0]}" EXISTS "$1")" = 1 ]; }
q0_blocked_is() { [ "$(blocked_clients "${Q_PORT[0]}")" = "$1" ]; }

@test "a hand-off: the waiter starts its command on the wake-up, one round trip after the holder's end" {
    local d=$BATS_TEST_TMPDIR url="redis://127.0.0.1:${Q_PORT[0]}"
    # The scripts cached (a cold cache costs one more round trip: the acquire's body).
    run -0 "$RL" -u "$url" ho -- true
    "$RL" -u "$url" ho -- sh -c 'while [ ! -e "$0" ]; do sleep 0.02; done' "$d/go" &
    DELAY_PIDS+=($!)
    local holder=$!
    wait_for 5 q0_exists ho
    counting_proxy "${Q_PORT[0]}"
    # Only the waiter goes through the counting proxy: its turns before its command starts are
    # the round trips on its side of the hand-off.
    "$RL" -u "redis://127.0.0.1:$PROXY_PORT" --wait 30s ho -- sh -c 'cat "$0" > "$1"' \
        "$TURNS" "$d/at-start" &
    local waiter=$!
    wait_for 5 q0_blocked_is 1
    # The acquire that queued it, and its BLPOP.
    [ "$(turns)" -eq 2 ]
    touch "$d/go"
    wait "$holder"
    wait "$waiter"
    # The release handed it the lock in the wake-up (issue 35): it starts with no more commands
    # (3 before: an acquire after the wake-up).
    echo "# turns at the start: $(cat "$d/at-start"), in all: $(turns)" >&3
    [ "$(cat "$d/at-start")" -eq 2 ]
    # Then its release with the run's record (a command this short ends before its first
    # renewal is due, a quarter of the claim window in).
    [ "$(turns)" -eq 3 ]
}

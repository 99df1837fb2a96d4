#!/usr/bin/env bats
# The Redlock quorum mode (-u three or more times): a majority of independent redis-servers
# holds the lock, the rest may be down or frozen; the lock is lost, and the command stopped in
# time, when no majority renews; fences keep growing across the quorum.
load helpers
load quorum_helpers
bats_require_minimum_version 1.5.0

setup() {
    quorum_start 5
    export REDLOCK_URL=$QUORUM_URL
    # Well above the 50ms default: this machine runs many tests at once (a sanitizer build
    # among them), and a single try whose nodes all answer late ends with 69, which these
    # tests would misread. The tests with a ttl of 1s or 2s name a tenth of it themselves.
    export REDLOCK_NODE_TIMEOUT=400ms
}
teardown() {
    rl_cleanup "$BATS_TEST_TMPDIR/cpid"
    quorum_stop
}

# statuses_are N: at least N contenders of the "20 contenders" test have exited.
statuses_are() {
    local files=("$BATS_TEST_TMPDIR"/status.*)
    [ -e "${files[0]}" ] && [ "${#files[@]}" -ge "$1" ]
}

# A command that records its pid, notes "ready" and then a heartbeat (Unix ms, replaced whole so
# that a kill never leaves it half-written) every 20ms until the file "go" appears.
BEATING="echo \$\$ > \"\$0/cpid\"; touch \"\$0/ready\"
    while [ ! -e \"\$0/go\" ]; do
        t=\${EPOCHREALTIME/[.,]/}; echo \$((t / 1000)) > \"\$0/beat.new\"
        mv \"\$0/beat.new\" \"\$0/beat\"; sleep 0.02
    done"

@test "two URLs are refused with a usage error that says why" {
    run -64 "$RL" -u "redis://127.0.0.1:${Q_PORT[0]}" -u "redis://127.0.0.1:${Q_PORT[1]}" \
        pair -- true
    assert_output --regexp "^redlock-run: two Redis URLs given: .*majority of two nodes is both"
    run -64 env REDLOCK_URL="$(q_urls 2)" "$RL" pair -- true
    assert_output --partial "majority of two nodes is both"
}

@test "-u given five times runs the command with the lock on every node, then releases it" {
    local args=() i
    for i in 0 1 2 3 4; do args+=(-u "redis://127.0.0.1:${Q_PORT[i]}"); done
    unset REDLOCK_URL
    run -0 "$RL" "${args[@]}" five -- sh -c 'echo "$REDLOCK_TOKEN" > "$0/token"
        for port; do redis-cli -p "$port" GET five; done' "$BATS_TEST_TMPDIR" "${Q_PORT[@]}"
    # While the command ran, every node held its token.
    assert_equal "$(grep -cx "$(cat "$BATS_TEST_TMPDIR/token")" <<<"$output")" 5
    [ -s "$BATS_TEST_TMPDIR/token" ]
    assert_equal "$(q_holding five "$(cat "$BATS_TEST_TMPDIR/token")")" 0
}

# The fence floor (redlock-run(7), REDLOCK QUORUM): nodes that draw the same fence need no fence
# step, so a run costs each node the two commands a single node's run costs.
@test "a run over five nodes that draw one fence alike sends each node two scripts, no fence step" {
    run -0 "$RL" alike -- true # every script cached on every node
    local port calls
    for port in "${Q_PORT[@]}"; do redis-cli -p "$port" CONFIG RESETSTAT >/dev/null; done
    run -0 "$RL" alike -- sh -c 'echo "$REDLOCK_FENCE"'
    local fence=$output
    for port in "${Q_PORT[@]}"; do
        calls=$(redis-cli -p "$port" INFO commandstats |
            awk -F'[=,:]' '/^cmdstat_(eval|evalsha):/ { n += $3 } END { print n + 0 }')
        assert_equal "$port: $calls" "$port: 2"
        assert_equal "$(redis-cli -p "$port" GET '{alike}:fence')" "$fence"
    done
}

@test "the lock is held on a majority with two nodes down" {
    q_down 0
    q_down 1
    local d=$BATS_TEST_TMPDIR
    # Every live node must answer each renewal: a 5s lease with a 500ms node timeout leaves a
    # loaded machine room (the test is about where the lock is held, not how fast).
    rl_start -t 5s --node-timeout 500ms --wait 20s twodown -- bash -c "$BEATING" "$d"
    wait_for 25 file_exists "$d/ready"
    # The token in the command's environment is the one stored on each live node.
    local token
    token=$(tr '\0' '\n' < "/proc/$(cat "$d/cpid")/environ" | sed -n 's/^REDLOCK_TOKEN=//p')
    assert_equal "$(q_holding twodown "$token")" 3
    touch "$d/go"
    rl_finish 5
    assert_equal "$RL_STATUS" 0
    assert_equal "$(q_holding twodown "$token")" 0
}

@test "three nodes down: exit 69 saying how many nodes answered, the command does not run" {
    q_down 0
    q_down 1
    q_down 2
    run -69 "$RL" threedown -- touch "$BATS_TEST_TMPDIR/ran"
    assert_output --regexp "^redlock-run: cannot take lock 'threedown': only 2 of 5 Redis nodes answered \(3 needed for a majority\)"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    # Nothing left behind on the nodes that answered.
    assert_equal "$(cli "${Q_PORT[3]}" EXISTS threedown)" 0
    assert_equal "$(cli "${Q_PORT[4]}" EXISTS threedown)" 0
}

@test "a lock held on a majority elsewhere is busy (75) with the count of accepting nodes" {
    cli "${Q_PORT[0]}" SET busy other >/dev/null
    cli "${Q_PORT[1]}" SET busy other >/dev/null
    cli "${Q_PORT[2]}" SET busy other >/dev/null
    run -75 "$RL" busy -- touch "$BATS_TEST_TMPDIR/ran"
    assert_output --regexp "^redlock-run: lock 'busy' is held elsewhere: only 2 of 5 nodes accepted it \(5 answered, 3 needed\)"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    # The failed attempt gave back the two nodes it had won, and left the others' alone.
    assert_equal "$(cli "${Q_PORT[3]}" EXISTS busy)" 0
    assert_equal "$(cli "${Q_PORT[4]}" EXISTS busy)" 0
    assert_equal "$(cli "${Q_PORT[0]}" GET busy)" other
}

@test "a node SIGSTOPped during renewal does not lose the lock" {
    local d=$BATS_TEST_TMPDIR
    # --wait: an acquire whose nodes all answer later than the node timeout (ASan on a busy
    # machine) is tried again, not given up with 69; the test is about the renewals. A 3s lease
    # and a 300ms node timeout (at most a tenth): with 1s and 100ms, a loaded machine's late
    # replies could fail renewals that the frozen node has no part in.
    rl_start -v -t 3s --node-timeout 300ms --wait 20s stopped -- bash -c "$BEATING" "$d"
    wait_for 25 file_exists "$d/ready"
    q_freeze 0
    # More than a ttl with one node frozen: several renewals, each timing out on that node.
    sleep 3.5
    q_thaw 0
    touch "$d/go"
    rl_finish 5
    assert_equal "$RL_STATUS" 0
    run cat "$RL_ERR"
    # Decided as soon as a majority renewed: the frozen node is never waited for.
    assert_line --regexp "renewed lock 'stopped' on [34] of 5 nodes"
    refute_output --partial "lost"
}

@test "two of three nodes frozen past the validity stop the command before the lease ends" {
    local d=$BATS_TEST_TMPDIR
    export REDLOCK_URL=$(q_urls 3)
    rl_start -t 1s --node-timeout 100ms --kill-after 200ms --wait 20s frozen -- bash -c "$BEATING" "$d"
    wait_for 25 file_exists "$d/ready"
    q_freeze 0
    q_freeze 1
    local frozen_at
    frozen_at=$(now_ms)
    rl_finish 10
    q_thaw 0
    q_thaw 1
    assert_equal "$RL_STATUS" 76
    pid_gone "$(cat "$d/cpid")"
    # No renewal sent after the freeze could succeed on a majority, so the lease ended at the
    # latest one ttl (1s) after it: the command's last heartbeat must come before that.
    local last
    last=$(cat "$d/beat")
    [ "$last" -lt $((frozen_at + 1000)) ]
    run cat "$RL_ERR"
    assert_output --regexp "redlock-run: lock 'frozen' lost: no renewal succeeded in time"
}

@test "a lock deleted on a majority is lost at the next renewal (76)" {
    local d=$BATS_TEST_TMPDIR
    # --wait: see the SIGSTOP test above.
    rl_start -t 5s --renew-every 100ms --wait 20s deleted -- bash -c "$BEATING" "$d"
    wait_for 25 file_exists "$d/ready"
    cli "${Q_PORT[0]}" DEL deleted >/dev/null
    cli "${Q_PORT[1]}" DEL deleted >/dev/null
    cli "${Q_PORT[2]}" DEL deleted >/dev/null
    rl_finish 5
    assert_equal "$RL_STATUS" 76
    pid_gone "$(cat "$d/cpid")"
}

@test "20 contenders at once: exactly one runs, the others report busy" {
    local d=$BATS_TEST_TMPDIR i pids=()
    for i in $(seq 20); do
        # The winner holds the lock until every other contender has given up, whenever each
        # started: on a loaded machine (or under a sanitizer) one started seconds late would
        # otherwise wait past a fixed-length run and rightly run after it. A long ttl and node
        # timeout: a renewal missed for the load would rightly lose the lock and let one in.
        (
            status=0
            "$RL" -q -t 5s --node-timeout 300ms --wait 1500ms contended -- sh -c \
                'echo "$REDLOCK_FENCE" >> "$0/ran"; while [ ! -e "$0/go" ]; do sleep 0.05; done' \
                "$d" || status=$?
            echo "$status" >"$d/status.$i"
        ) &
        pids+=($!)
    done
    wait_for 60 statuses_are 19
    touch "$d/go"
    wait_for 30 statuses_are 20
    wait "${pids[@]}"
    local ok=0 busy=0 other=0 f
    for f in "$d"/status.*; do
        case $(cat "$f") in 0) ok=$((ok + 1)) ;; 75) busy=$((busy + 1)) ;; *) other=$((other + 1)) ;; esac
    done
    assert_equal "$(wc -l < "$d/ran")" 1
    assert_equal "$ok" 1
    assert_equal "$busy" 19
    assert_equal "$other" 0
}

@test "20 waiting contenders run one at a time, with growing fences" {
    local d=$BATS_TEST_TMPDIR i pids=()
    # A 10s lease with a 1s node timeout: the runs hold the lock for 50ms each, so nothing here
    # is about renewals; with -t 2s and 200ms, one of twenty ThreadSanitizer runs starting at
    # once on two cores missed its renewals' majority for 700ms and lost the lock (76).
    for i in $(seq 20); do
        "$RL" -t 10s --node-timeout 1s --wait 60s serial -- sh -c '
            mkdir "$0/running" 2>/dev/null || echo overlap >> "$0/bad"
            echo "$REDLOCK_FENCE" >> "$0/fences"; sleep 0.05; rmdir "$0/running"' "$d" &
        pids+=($!)
    done
    for i in "${pids[@]}"; do wait "$i"; done
    [ ! -e "$d/bad" ]
    assert_equal "$(wc -l < "$d/fences")" 20
    # Fences in the order the runs held the lock are strictly increasing.
    run -0 sort -n -c -u "$d/fences"
}

@test "the fence stays monotonic when a node restarts empty between acquisitions" {
    local d=$BATS_TEST_TMPDIR
    # Counters as real ones are: near Redis's clock in microseconds (every acquire raises a
    # lagging counter to it). Node 0 has seen many more acquisitions than the others.
    local base
    base=$(cli "${Q_PORT[0]}" TIME | head -1)000000
    cli "${Q_PORT[0]}" SET '{fenced}:fence' $((base + 1000)) >/dev/null
    for i in 1 2 3 4; do cli "${Q_PORT[$i]}" SET '{fenced}:fence' $((base + 10)) >/dev/null; done
    # First holder: only nodes 0, 1, 2 are up.
    q_down 3
    q_down 4
    run -0 "$RL" fenced -- sh -c 'echo "$REDLOCK_FENCE"'
    local first=$output
    [ "$first" -gt $((base + 1000)) ]
    # The fence was raised on the whole majority, not only on node 0.
    assert_equal "$(cli "${Q_PORT[1]}" GET '{fenced}:fence')" "$first"
    assert_equal "$(cli "${Q_PORT[2]}" GET '{fenced}:fence')" "$first"
    # Node 0 restarts without its data and its counter comes back low; nodes 3 and 4 return
    # with stale counters; node 2 is down. The next majority (0, 1, 3, 4) shares only node 1
    # with the first one, and may be decided by 0, 3 and 4 alone: node 0's counter, raised to
    # its clock, is what keeps the fence growing then.
    q_down 0
    q_up 0
    cli "${Q_PORT[0]}" SET '{fenced}:fence' 1 >/dev/null
    q_up 3
    q_up 4
    cli "${Q_PORT[3]}" SET '{fenced}:fence' $((base + 10)) >/dev/null
    cli "${Q_PORT[4]}" SET '{fenced}:fence' $((base + 10)) >/dev/null
    q_down 2
    run -0 "$RL" fenced -- sh -c 'echo "$REDLOCK_FENCE"'
    [ "$output" -gt "$first" ]
}

@test "--node-timeout must be well below the ttl" {
    run -64 "$RL" --node-timeout 200ms -t 1s nt -- true
    assert_output --regexp "^redlock-run: --node-timeout \(200ms\) must be at most a tenth of --ttl \(1s\)"
}

@test "an even number of nodes is allowed: four nodes need three" {
    export REDLOCK_URL=$(q_urls 4)
    q_down 0
    run -0 "$RL" four -- true
    q_down 1
    run -69 "$RL" four -- true
    assert_output --partial "only 2 of 4 Redis nodes answered (3 needed for a majority)"
}

@test "a signal during --wait ends the wait without taking the lock" {
    cli "${Q_PORT[0]}" SET waited other >/dev/null
    cli "${Q_PORT[1]}" SET waited other >/dev/null
    cli "${Q_PORT[2]}" SET waited other >/dev/null
    rl_start -v --wait 30s waited -- touch "$BATS_TEST_TMPDIR/ran"
    wait_for 5 file_contains "$RL_ERR" "nodes accepted, 5 answered); waiting (up to 30s)"
    kill -TERM "$RL_PID"
    # A bound against a hang only: in a clean-clone ASan pass the run said it had stopped
    # waiting and still took over 5s to leave the five queues and exit (not yet explained).
    rl_finish 30
    assert_equal "$RL_STATUS" 143
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    assert_equal "$(cli "${Q_PORT[3]}" EXISTS waited)" 0
    assert_equal "$(cli "${Q_PORT[4]}" EXISTS waited)" 0
}

@test "a nested run of the same lock under the quorum runs directly, verified on a majority" {
    # The command does not inherit REDLOCK_URL (it may hold a password): the inner run names
    # the same nodes itself, as a script would.
    run "$RL" -v job -- env REDLOCK_URL="$QUORUM_URL" "$RL" -v job -- \
        sh -c 'echo "inner fence $REDLOCK_FENCE"'
    assert_success
    assert_output --partial "is held by a parent redlock-run (token verified)"
    assert_line --regexp '^inner fence [0-9]+$'
    # A stale parent environment is refused (76), never run unverified.
    run -76 env REDLOCK_KEY=job REDLOCK_TOKEN=0123456789abcdef0123456789abcdef \
        REDLOCK_REDIS="$("$RL" job -- printenv REDLOCK_REDIS)" "$RL" job -- \
        touch "$BATS_TEST_TMPDIR/ran"
    assert_output --partial "no longer held by the parent redlock-run"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "--min-replicas is counted per node: nodes without replicas give no majority, 69, nothing runs" {
    # Nodes slow to answer (ASan on a busy machine) must not pass for nodes without replicas:
    # a generous --node-timeout, as nothing here is about timeouts.
    run -69 "$RL" --min-replicas 1 --replica-timeout 50ms --node-timeout 1s job -- \
        touch "$BATS_TEST_TMPDIR/ran"
    assert_output --partial "replica"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    local i
    for i in 0 1 2 3 4; do [ "$(cli "${Q_PORT[$i]}" EXISTS job)" = 0 ]; done
}

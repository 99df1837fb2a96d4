#!/usr/bin/env bats
# The operator commands with a quorum (several -u): status asks every node and says whether a
# majority holds one token; release goes to every node; list shows what a majority holds.
load helpers
load quorum_helpers
bats_require_minimum_version 1.5.0

setup() {
    quorum_start 5
    export REDLOCK_URL=$QUORUM_URL
    # The nodes these tests stop are killed (refused at once), never frozen, so a node timeout
    # far above quorum.bats's costs nothing, and a loaded machine's slow answer (status --json
    # once counted 4 of 5 live nodes with 100ms) is still counted.
    export REDLOCK_NODE_TIMEOUT=1s
}
teardown() {
    stop_holder
    quorum_stop
}

@test "status reports every node and whether a majority holds the lock" {
    hold held
    q_down 4
    run -0 "$RL" status held
    assert_line --regexp "^state: +held by a majority \(4 of 5 nodes, 3 needed; 4 answered\)"
    assert_line --regexp "^node 127.0.0.1:${Q_PORT[0]}: held, token [0-9a-f]{8}\.\.\., ttl left"
    assert_line --regexp "^node 127.0.0.1:${Q_PORT[4]}: unreachable"
}

@test "status --json gives the per-node states and the majority" {
    hold jheld
    run -0 "$RL" status --json jheld
    run -0 /usr/bin/python3 -c '
import json, sys
s = json.loads(sys.argv[1])
assert s["held"] is True and s["nodes"] == 5 and s["majority"] == 3 and s["holding"] == 5, s
assert len(s["per_node"]) == 5 and all(n["lock"]["token"] == s["token"] for n in s["per_node"]), s
' "$output"
}

@test "status --json of a quorum lock has the single node's holder, ttl_ms and fence: jq .holder.host" {
    hold jqheld
    run -0 "$RL" status --json jqheld
    run -0 jq -r '.holder.host, (.ttl_ms > 0), (.fence > 0), (.per_node | length)' <<<"$output"
    assert_output "$(hostname)
true
true
5"
    run -1 "$RL" status --json jqfree
    run -0 jq -r '.held, .holder, .ttl_ms, (.redis_time_ms > 0)' <<<"$output"
    assert_output "false
null
null
true"
}

@test "status of a lock held on only a minority is not held (exit 1)" {
    cli "${Q_PORT[0]}" SET minority other >/dev/null
    cli "${Q_PORT[1]}" SET minority other >/dev/null
    run -1 "$RL" status minority
    assert_line --regexp "^state: +not held by a majority \(at most 2 of 5 nodes hold one token"
}

@test "status with too few nodes answering is 69" {
    q_down 0
    q_down 1
    q_down 2
    run -69 "$RL" status gone
    assert_output --regexp "^redlock-run: cannot tell whether lock 'gone' is held: only 2 of 5 Redis nodes answered"
}

@test "release --force deletes the lock on every node" {
    hold forced
    run -0 "$RL" release --force forced
    assert_line "lock 'forced': released on 5 of 5 nodes"
    for i in 0 1 2 3 4; do assert_equal "$(cli "${Q_PORT[$i]}" EXISTS forced)" 0; done
}

@test "release --token releases only that token, on every node" {
    cli "${Q_PORT[0]}" SET tok other >/dev/null
    for i in 1 2 3 4; do cli "${Q_PORT[$i]}" SET tok mine >/dev/null; done
    run -0 "$RL" release --token mine tok
    assert_line "lock 'tok': released on 4 of 5 nodes"
    assert_line "node 127.0.0.1:${Q_PORT[0]}: held by another token; left alone"
    assert_equal "$(cli "${Q_PORT[0]}" GET tok)" other
    run -1 "$RL" release --token mine tok
}

@test "list shows the locks one token holds on a majority, with how many nodes hold them" {
    hold held
    # A minority key (a partial attempt) and a key split between two tokens are not held.
    cli "${Q_PORT[0]}" SET partial x >/dev/null
    cli "${Q_PORT[1]}" SET split a >/dev/null
    cli "${Q_PORT[2]}" SET split a >/dev/null
    cli "${Q_PORT[3]}" SET split b >/dev/null
    cli "${Q_PORT[4]}" SET split b >/dev/null
    q_down 4
    run -0 --separate-stderr "$RL" list
    # The node that did not answer is named on stderr.
    [[ "$stderr" == "redlock-run: list: node 127.0.0.1:${Q_PORT[4]} did not answer: "* ]]
    assert_line --index 0 --regexp '^NAME +NODES +TTL +FENCE +HOLDER'
    assert_line --index 1 --regexp '^held +4 of 5 +[0-9]'
    assert_equal "${#lines[@]}" 2
    run -0 --separate-stderr "$RL" list --json
    assert_output --partial '"name":"held","key":"held","nodes":5,"majority":3,"answered":4,"holding":4,"lock":{'
    refute_output --partial partial
    refute_output --partial split
    # Fewer nodes than a majority answering: 69, not an empty list.
    q_down 3
    q_down 2
    run -69 "$RL" list
    assert_output --partial "only 2 of 5 Redis nodes answered (3 needed for a majority)"
}

@test "a minority of nodes cannot add a run to history or forge the last run in status" {
    # A node timeout far above the default 50ms: the test needs every node's copy of both runs
    # (and every node's answer below), which a loaded machine can otherwise delay past it. And
    # --wait: an attempt that still misses the majority (seen with two suites at once) leaves its
    # partial holds until they expire; the run then waits for them instead of giving up. Each
    # run must have run: the test is about their ledger entries.
    export REDLOCK_NODE_TIMEOUT=2s
    run -0 "$RL" --wait 120s job true
    run -3 "$RL" --wait 120s job sh -c 'exit 3'
    # Two of five nodes agree on a run nobody made, newer than every real one, and a success.
    local end=$(($(date +%s) * 1000 + 60000))
    local forged
    forged=$(printf 'end_ms=%s\tstart_ms=%s\toutcome=ran\tduration_ms=1\thost=forged\tpid=4242\tuser=evil\texit=0\tfence=99' "$end" "$((end - 1))")
    cli "${Q_PORT[0]}" LPUSH '{job}:ledger' "$forged" > /dev/null
    cli "${Q_PORT[1]}" LPUSH '{job}:ledger' "$forged" > /dev/null
    run -1 --separate-stderr "$RL" status job
    # status shows a node's newest entry, and its newest success, only where a majority of nodes
    # have the same one. A node whose give-back came too late (an acquire delayed past its node
    # timeout, then run after the release: seen with two suites at once) lacks a real run; then
    # that line cannot be shown, but never as the forged run.
    local i entries newest=0 newest_ok=0 first_ok
    for i in 0 1 2 3 4; do
        entries=$(cli "${Q_PORT[$i]}" LRANGE '{job}:ledger' 0 -1)
        [[ "$(head -n 1 <<<"$entries")" == *$'\t'exit=3* ]] && newest=$((newest + 1))
        # As last_runs.lua picks it: the newest entry that ran and exited 0.
        first_ok=$(grep -F $'\toutcome=ran\t' <<<"$entries" | grep -m 1 -F $'\texit=0\t' || true)
        [ -n "$first_ok" ] && [[ "$first_ok" != *host=forged* ]] && newest_ok=$((newest_ok + 1))
    done
    # Where the nodes agree on neither, status has no last-run lines at all (history.cpp's
    # last_runs_text), as for a lock without a ledger: seen with two suites at once.
    if [ "$newest" -ge 3 ]; then
        assert_line --regexp "^last run: .*ran, exit 3"
    elif [ "$newest_ok" -ge 3 ]; then
        assert_line --regexp "^last run: none that can be shown"
    else
        refute_line --regexp "^last (run|ok):"
    fi
    if [ "$newest_ok" -ge 3 ]; then
        assert_line --regexp "^last ok: .*ran, exit 0"
    elif [ "$newest" -ge 3 ]; then
        assert_line --regexp "^last ok: +none"
    fi
    refute_output --partial forged
    run -0 --separate-stderr "$RL" history --json job
    assert_equal "${#lines[@]}" 2
    refute_output --partial forged
    run -0 --separate-stderr "$RL" history job
    refute_output --partial forged
}

#!/usr/bin/env bats
# The restart guard (issue 38): a Redis that restarted without persistence holds a lock whose
# data it lost back until a holder from before has lost its lease (--restart-guard, default the
# TTL), on one node, for --permits, --shared and --once-per, and on each node of a quorum. The
# suite turns the guard off (helpers.bash): here it is on. Contender loops check the commands'
# own log with the checkers (lease_probe.py), admitting no overlap at all.
load helpers
load contenders
load quorum_helpers
load cluster_helpers
bats_require_minimum_version 1.5.0

setup() {
    unset REDLOCK_RESTART_GUARD
    redis_start
}
teardown() {
    touch "$BATS_TEST_TMPDIR/go"
    contenders_cleanup
    rl_cleanup
    [ -z "${Q_PORT:-}" ] || quorum_stop
    [ -z "${CLUSTER_PIDS:-}" ] || cluster_stop
    redis_stop
}

# The server's uptime in whole seconds, as the acquire script reads it (INFO server).
uptime_of() { cli "$1" INFO server | tr -d '\r' | sed -n 's/^uptime_in_seconds://p'; }
uptime_at_least() { [ "$(uptime_of "$REDIS_PORT")" -ge "$1" ]; }

@test "a restart without persistence, then a run without --wait: busy, naming the restart and the time left" {
    run -0 "$RL" --restart-guard 0 job -- true
    redis_restart
    # The TTL is the guard: 30s is far longer than the restart and this run take.
    run -75 "$RL" -t 30s job -- echo ran
    refute_output --partial ran
    assert_output --regexp "lock 'job' not taken: Redis on 127\.0\.0\.1:[0-9]+ restarted (under 1s|[0-9]+s) ago without this lock's data"
    assert_output --regexp "held back for [0-9a-z.]+ more \(--restart-guard\); not running the command"
    # Nothing was written: the next run after the guard is the first holder.
    [ "$(cli "$REDIS_PORT" EXISTS job)" = 0 ]
    # --restart-guard 0 (or REDLOCK_RESTART_GUARD=0) turns it off.
    run -0 "$RL" -t 30s --restart-guard 0 job -- echo ran
    assert_output ran
}

@test "a held-back run with --wait runs once the server is as old as the guard" {
    redis_restart
    run -0 "$RL" -t 2s -w 30s job -- echo ran
    assert_output ran
    # The guard counts from the lower bound of the uptime (whole seconds, minus one): the run
    # began once uptime - 1 >= 2.
    uptime_at_least 3
}

@test "the first use of a new name on a long-running server starts at once" {
    # "Long-running": older than the guard (one second of TTL, plus the second the uptime's
    # rounding costs).
    wait_for 20 uptime_at_least 2
    run -0 "$RL" -t 1s fresh-name -- echo ran
    assert_output ran
    # The option sets the guard, whatever the TTL.
    run -0 "$RL" -t 30s --restart-guard 1s other-name -- echo ran
    assert_output ran
}

@test "a name whose data survived the restart (persistence) is not held back" {
    redis_stop
    redis_start --appendonly yes --appendfsync always
    run -0 "$RL" --restart-guard 0 kept -- true
    redis_restart
    [ "$(cli "$REDIS_PORT" EXISTS '{kept}:fence')" = 1 ]
    run -0 "$RL" -t 30s kept -- echo ran
    assert_output ran
}

@test "on a Cluster the lock's master reads its uptime in the script: a new cluster holds a new name back" {
    # INFO from a script on a cluster node (no key, so no slot to check), and the message names
    # the master; a cluster seconds old looks like one restarted without persistence.
    cluster_start
    run -75 "$RL" -u "$CLUSTER_URL" -t 30s cjob -- echo ran
    refute_output --partial ran
    assert_output --regexp "lock 'cjob' not taken: Redis on redis-cluster [0-9.:,]+ restarted .* ago without this lock's data"
    run -0 "$RL" -u "$CLUSTER_URL" -t 30s --restart-guard 0 cjob -- echo ran
    assert_output ran
    # Its counter is there now: no guard, however young the cluster.
    run -0 "$RL" -u "$CLUSTER_URL" -t 30s cjob -- echo ran
}

@test "a --once-per slot that began before the restart is skipped, not run again" {
    run -0 "$RL" --restart-guard 0 --once-per 1h daily -- echo first
    redis_restart
    run -75 "$RL" -t 1s --once-per 1h daily -- echo again
    refute_output --partial again
    assert_output --partial "may already have run: Redis restarted"
}

# ---- contender loops under repeated restarts without persistence ---------------------------
# Each restart comes while a command runs (-t 1s, 0.2s of work, four contenders that wait), so
# without the guard the next waiter takes the lock at once beside the old holder (restart.bats
# admits that overlap); with it no overlap is admitted.

restart_rounds() {
    local _
    for _ in 1 2; do
        contenders_progress 60 2
        redis_restart
    done
    contenders_progress 60 3
    contenders_stop
}

@test "plain: contenders across restarts without persistence never overlap, fences unique and growing" {
    contenders_start 4 churn --wait 30s -t 1s
    restart_rounds
    contenders_check
}

check_many() {
    run /usr/bin/python3 "$PROBE" check "$CONT_DIR/log" "$@"
    echo "$output"
    echo "# $(tail -n 1 <<<"$output")" >&3
    assert_success
    local other
    other=$(awk '$1 == "exit" && $3 != 0 && $3 != 76 { print $2 }' "$CONT_DIR/log")
    [ -z "$other" ]
}

@test "--permits 2: contenders across restarts without persistence never exceed 2 or repeat a fence" {
    CONTENDER_WORK=0.4 contenders_start 5 churnp --wait 30s -t 1s --permits 2
    restart_rounds
    check_many --at-once 2
}

@test "--shared: an exclusive run across restarts without persistence is never beside another" {
    CONTENDER_WORK=0.4 contenders_start 3 churns --wait 30s -t 1s --shared
    local shared=$CONTENDERS
    # Two exclusive contenders beside them (their tags start with r2.).
    contenders_start 2 churns --wait 30s -t 1s
    CONTENDERS="$CONTENDERS $shared"
    restart_rounds
    check_many --at-once 0 --exclusive r2.
}

@test "--once-per: across restarts without persistence no slot runs twice" {
    # Slots of 2s; a restart every 4s, which leaves the guard (1s of TTL, plus a second of
    # rounding) time to pass between two.
    local d=$BATS_TEST_TMPDIR pids=() end=$((SECONDS + 11)) next=$((SECONDS + 3))
    for _ in 1 2 3; do
        (
            while [ "$SECONDS" -lt "$end" ]; do
                "$RL" --once-per 2s -w 3s -t 1s -q slots -c \
                    "echo \"start \$REDLOCK_SLOT\" >> $(printf %q "$d/log"); sleep 0.1" \
                    2>>"$d/err" || true
            done
        ) &
        pids+=($!)
    done
    while [ "$SECONDS" -lt "$end" ]; do
        if [ "$SECONDS" -ge "$next" ]; then
            redis_restart
            next=$((SECONDS + 4))
        fi
        nap 0.1
    done
    wait "${pids[@]}"
    touch "$d/log"
    cat "$d/log"
    [ -z "$(awk '{print $2}' "$d/log" | sort | uniq -d)" ]
    [ "$(wc -l <"$d/log")" -ge 1 ]
}

@test "quorum: contenders across nodes restarted one at a time never overlap, fences unique" {
    quorum_start 3
    # Renewals 1.5s apart, commands of a second: a holder notices a lost node only at its next
    # renewal.
    CONTENDER_WORK=1 contenders_start 4 qchurn -u "$QUORUM_URL" --wait 30s -t 3s \
        --renew-every 1.5s
    local pair first second
    # Two nodes restarted back to back, twice: a holder keeps a bare majority through the
    # first restart (the other two nodes) and loses it at the second, where the two empty nodes
    # would otherwise make a new majority at once, before the holder's next renewal.
    for pair in "2 0" "1 2"; do
        contenders_progress 60 2
        read -r first second <<<"$pair"
        q_down "$first"
        q_up "$first"
        q_down "$second"
        q_up "$second"
    done
    contenders_progress 60 3
    contenders_stop
    contenders_check
}

#!/usr/bin/env bats
# redis-sentinel:// URLs against one master, one replica and three real redis-sentinels on
# loopback: the master is found through the sentinels, the database, nesting, unreachable and
# lying sentinels, the operator commands and sentinel passwords. None of these tests moves the
# master, so the topology is started once for the file; the failovers, which do, are in
# sentinel_failover.bats with a topology each.

load helpers
load sentinel_helpers
bats_require_minimum_version 1.5.0

setup_file() {
    BATS_TEST_TMPDIR=$BATS_FILE_TMPDIR sentinel_setup
    export MASTER_PORT REPLICA_PORT S1_PORT S2_PORT S3_PORT SENTINEL_URL
    export SHARED_NODE_PIDS="${NODE_PIDS[*]}"
}

teardown_file() {
    local pid
    for pid in $SHARED_NODE_PIDS; do node_stop "$pid"; done
}

setup() {
    NODE_PIDS=()  # nodes a test starts for itself; the shared ones are the file's
    PIDS=()
}

teardown() {
    touch "$BATS_TEST_TMPDIR/go"
    local p
    for p in ${PIDS[@]+"${PIDS[@]}"}; do kill -9 "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rl_cleanup
    nodes_stop_all
    [ -z "${REPLICA_WRITABLE:-}" ] || cli "$REPLICA_PORT" CONFIG SET replica-read-only yes >/dev/null
    # Replicated: also clears what a test wrote on a writable replica.
    cli "$MASTER_PORT" FLUSHALL >/dev/null
}

@test "a run through the sentinels takes the lock on the master and releases it" {
    run "$RL" -u "$SENTINEL_URL" job -- sh -c "redis-cli -p $MASTER_PORT GET job"
    assert_success
    assert_output --regexp '^[0-9a-f]{32}$'
    [ "$(cli "$MASTER_PORT" EXISTS job)" = 0 ]
}

@test "a database number after the master name selects that database on the master" {
    run "$RL" -u "$SENTINEL_URL/3" job -- sh -c "redis-cli -p $MASTER_PORT -n 3 GET job"
    assert_success
    assert_output --regexp '^[0-9a-f]{32}$'
}

@test "a nested run for the same lock through the same sentinel URL runs directly" {
    run "$RL" -u "$SENTINEL_URL" job -- "$RL" -v -u "$SENTINEL_URL" job -- echo inner
    assert_success
    assert_output --partial "is held by a parent redlock-run (token verified)"
    assert_line inner
}

@test "an unreachable sentinel is skipped for the next one" {
    local dead
    dead=$(free_port)
    run "$RL" -v -u "redis-sentinel://127.0.0.1:$dead,127.0.0.1:$S2_PORT/$MASTER_NAME" job -- true
    assert_success
    assert_output --partial "sentinel 127.0.0.1:$S2_PORT says master '$MASTER_NAME' is at 127.0.0.1:$MASTER_PORT"
}

@test "no reachable sentinel: exit 69 naming each one, and the command does not run" {
    local dead1 dead2
    dead1=$(free_port)
    dead2=$(free_port)
    run "$RL" -u "redis-sentinel://127.0.0.1:$dead1,127.0.0.1:$dead2/$MASTER_NAME" job -- \
        touch "$BATS_TEST_TMPDIR/ran"
    assert_failure 69
    assert_output --partial "no sentinel could tell where master '$MASTER_NAME' is"
    assert_output --partial "127.0.0.1:$dead1"
    assert_output --partial "127.0.0.1:$dead2"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "a master name the sentinels do not know: exit 69" {
    run "$RL" -u "redis-sentinel://127.0.0.1:$S1_PORT/nosuchmaster" job -- true
    assert_failure 69
    assert_output --partial "the sentinel at 127.0.0.1:$S1_PORT does not know master 'nosuchmaster'"
}

@test "a sentinel that names a replica as master is refused after ROLE (exit 69)" {
    sentinel_start STALE "$REPLICA_PORT"
    run "$RL" -u "redis-sentinel://127.0.0.1:$STALE_PORT/$MASTER_NAME" job -- \
        touch "$BATS_TEST_TMPDIR/ran"
    assert_failure 69
    assert_output --partial "named 127.0.0.1:$REPLICA_PORT as master '$MASTER_NAME', but it says it is a slave"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}


@test "a sentinel that names a writable replica as master leaves no lock on it" {
    REPLICA_WRITABLE=1
    cli "$REPLICA_PORT" CONFIG SET replica-read-only no >/dev/null
    # The scripts cached on the replica, so that the acquire sent behind ROLE runs there.
    run -0 "$RL" -u "redis://127.0.0.1:$REPLICA_PORT" warm -- true
    sentinel_start STALE "$REPLICA_PORT"
    run "$RL" -u "redis-sentinel://127.0.0.1:$STALE_PORT/$MASTER_NAME" job -- \
        touch "$BATS_TEST_TMPDIR/ran"
    assert_failure 69
    assert_output --partial "named 127.0.0.1:$REPLICA_PORT as master '$MASTER_NAME', but it says it is a slave"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    # Given back on the replica, on the same connection, before the error.
    assert_equal "$(cli "$REPLICA_PORT" EXISTS job '{job}:info')" 0
}

# commands_on PORT: the commands the server (or sentinel) on PORT has processed so far.
commands_on() { cli "$1" INFO stats | tr -d '\r' | sed -n 's/^total_commands_processed://p'; }

@test "a run asks the sentinels once: the release goes to the master the acquire found" {
    # A master and a sentinel of this test's own, so that no other sentinel sends this one
    # anything (sentinels that know each other PING every second).
    node_start OWN
    sentinel_start OWN_S "$OWN_PORT"
    local before idle after
    before=$(commands_on "$OWN_S_PORT")
    idle=$(($(commands_on "$OWN_S_PORT") - before))  # the INFO itself, counted once done
    before=$(commands_on "$OWN_S_PORT")
    run "$RL" -u "redis-sentinel://127.0.0.1:$OWN_S_PORT/$MASTER_NAME" once -- true
    after=$(commands_on "$OWN_S_PORT")
    assert_success
    # One SENTINEL get-master-addr-by-name for the acquire; the release reused its master.
    [ "$((after - before - idle))" = 1 ] || { echo "sentinel commands: $((after - before - idle))" >&2; false; }
    [ "$(cli "$OWN_PORT" EXISTS once)" = 0 ]
}
@test "status, list and release work through the sentinels" {
    hold job -u "$SENTINEL_URL"
    run "$RL" status -u "$SENTINEL_URL" job
    assert_success
    assert_output --partial "state:    held"
    run "$RL" list -u "$SENTINEL_URL"
    assert_success
    assert_output --partial "job"
    run "$RL" release -u "$SENTINEL_URL" --force job
    assert_success
    assert_output --partial "released lock 'job'"
    [ "$(cli "$MASTER_PORT" EXISTS job)" = 0 ]
    stop_holder
}

@test "--permits and --shared through the sentinels: holders together on the master, a third kept out" {
    local d=$BATS_TEST_TMPDIR mode
    for mode in "--permits 2" --shared; do
        rm -f "$d/go" "$d/held"
        # shellcheck disable=SC2086
        for i in 1 2; do
            "$RL" -u "$SENTINEL_URL" $mode --wait 10s multi -- bash -c \
                'echo x >> "$0/held"; g=$0/go; '"$AWAIT" "$d" &
            PIDS+=($!)
        done
        wait_for 10 lines_are "$d/held" 2
        [ "$(cli "$MASTER_PORT" EXISTS multi)" = 1 ]
        # shellcheck disable=SC2086
        run "$RL" -u "$SENTINEL_URL" $([ "$mode" = --shared ] || echo $mode) multi -- true
        assert_failure 75
        touch "$d/go"
        for i in "${PIDS[@]}"; do wait "$i"; done
        PIDS=()
        [ "$(cli "$MASTER_PORT" EXISTS multi)" = 0 ]
    done
}

@test "sentinels with a password: --sentinel-password-file logs in, without it exit 77" {
    SENTINEL_AUTH=sentinel-secret sentinel_start LOCKED "$MASTER_PORT" "requirepass sentinel-secret"
    local url="redis-sentinel://127.0.0.1:$LOCKED_PORT/$MASTER_NAME"
    echo sentinel-secret >"$BATS_TEST_TMPDIR/sentinel.pass"
    run "$RL" -u "$url" --sentinel-password-file "$BATS_TEST_TMPDIR/sentinel.pass" job -- true
    assert_success
    REDLOCK_SENTINEL_PASSWORD_FILE="$BATS_TEST_TMPDIR/sentinel.pass" run "$RL" -u "$url" job -- true
    assert_success
    run "$RL" -u "$url" job -- touch "$BATS_TEST_TMPDIR/ran"
    assert_failure 77
    assert_output --partial "NOAUTH"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "--sentinel-password-file with a redis:// URL is a usage error" {
    echo pw >"$BATS_TEST_TMPDIR/sentinel.pass"
    run "$RL" -u "redis://127.0.0.1:$MASTER_PORT" --sentinel-password-file \
        "$BATS_TEST_TMPDIR/sentinel.pass" job -- true
    assert_failure 64
    assert_output --partial "--sentinel-password-file needs a redis-sentinel:// URL"
}

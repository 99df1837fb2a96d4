#!/usr/bin/env bats
# The fencing recipes of packaging/examples/fencing, end to end against the real stores: a
# holder frozen past its lease (a paused host) resumes and tries its write after a newer holder
# has written, and the store refuses it. One throwaway PostgreSQL server serves the whole file.
load helpers

EXAMPLES="$BATS_TEST_DIRNAME/../../packaging/examples/fencing"

setup_file() {
    pg_start
    psql -X -q -v ON_ERROR_STOP=1 -f "$EXAMPLES/postgresql.sql"
}

teardown_file() { pg_stop; }

setup() { redis_start; }

teardown() {
    touch "$BATS_TEST_TMPDIR/end"
    # A holder left frozen by a failed test: resumed so that it can die.
    if [ -s "$BATS_TEST_TMPDIR/a.pgid" ]; then
        kill -CONT -- "-$(cat "$BATS_TEST_TMPDIR/a.pgid")" 2>/dev/null || true
    fi
    [ -z "${RL_PID:-}" ] || kill -CONT "$RL_PID" 2>/dev/null || true
    rl_cleanup "$BATS_TEST_TMPDIR/a.pgid"
    redis_stop
}

# The newest PostgreSQL server binaries Debian's packages installed.
pg_bindir() {
    local dir
    dir=$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin 2>/dev/null | sort -V | tail -n 1)
    [ -x "$dir/initdb" ] || {
        echo "no PostgreSQL server under /usr/lib/postgresql: run tests/deps.sh (package postgresql)" >&2
        return 1
    }
    echo "$dir"
}

# pg_as COMMAND...: execs COMMAND as the server's owner, in PG_DIR. PostgreSQL refuses to run as
# root, so under root that is nobody, in a directory of its own outside the root-only bats
# directories. Started as `(pg_as ...) &`, the pid in $! is then COMMAND's own.
pg_as() {
    cd "$PG_DIR" || exit
    if [ "$(id -u)" -eq 0 ]; then
        exec setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME="$PG_DIR" "$@"
    fi
    exec "$@"
}

pg_ready() { psql -X -q -c 'SELECT 1' >/dev/null 2>&1; }

# Starts a PostgreSQL server on a free loopback port in a temporary directory, user `fence`
# trusted without password; sets PG_PID and PG_DIR and the libpq variables psql reads.
pg_start() {
    local bin
    bin=$(pg_bindir)
    PG_DIR=$(mktemp -d /tmp/redlock-fencing-pg.XXXXXX)
    export PG_DIR
    [ "$(id -u)" -ne 0 ] || chown nobody:nogroup "$PG_DIR"
    (pg_as "$bin/initdb" -D "$PG_DIR/data" -U fence --auth=trust --no-locale -E UTF8 --no-sync \
        >"$PG_DIR/initdb.log" 2>&1) || { cat "$PG_DIR/initdb.log" >&2; return 1; }
    export PGHOST=127.0.0.1 PGUSER=fence PGDATABASE=postgres
    for _ in 1 2 3 4 5; do
        PGPORT=$(free_port)
        export PGPORT
        # fsync off: the data is thrown away with the directory. fd 3 closed: bats waits for
        # every holder of its output descriptor before it ends.
        (pg_as "$bin/postgres" -D "$PG_DIR/data" -p "$PGPORT" -c listen_addresses=127.0.0.1 \
            -c unix_socket_directories="$PG_DIR" -c fsync=off >"$PG_DIR/server.log" 2>&1 3>&-) &
        PG_PID=$!
        if wait_for 20 pg_ready; then
            export PG_PID
            return 0
        fi
        kill -9 "$PG_PID" 2>/dev/null || true
        wait "$PG_PID" 2>/dev/null || true
    done
    cat "$PG_DIR/server.log" >&2
    return 1
}

pg_stop() {
    if [ -n "${PG_PID:-}" ]; then
        # SIGINT: PostgreSQL's fast shutdown (SIGTERM would wait for clients to leave).
        kill -INT "$PG_PID" 2>/dev/null || true
        wait_for 20 pid_gone "$PG_PID" || kill -9 "$PG_PID" 2>/dev/null || true
    fi
    [ -z "${PG_DIR:-}" ] || rm -rf "$PG_DIR"
}

# paused_holder NAME A_LAST B_LAST WRITER...: plays a host paused past its lease. Holder A
# (TTL 3s) takes lock NAME, and its command records its fence and waits for a go file before
# running `WRITER... A_LAST`. A is frozen whole: redlock-run and the command's process group.
# Once Redis has expired the key, holder B takes the lock and runs `WRITER... B_LAST`, which
# must succeed. Then A's command resumes and runs its write; A's redlock-run is resumed after
# that write and must report the lock lost (76).
# Sets A_FENCE, B_FENCE, A_STATUS (the writer's exit status in A) and A_OUTPUT (its output).
paused_holder() {
    local name=$1 a_last=$2 b_last=$3 d=$BATS_TEST_TMPDIR
    shift 3
    # 3s, not 1s: the lease must outlive A's start, the wait for its watchdog and the freeze on a
    # loaded machine (a late renewal would stop A before it is paused); it ends while A is frozen
    # however long it is, and the test waits for that.
    rl_start -t 3s "$name" -- bash -c '
        d=$1
        shift
        echo "$$" > "$d/a.pgid"
        echo "$REDLOCK_FENCE" > "$d/a.fence"
        touch "$d/a.ready"
        while [ ! -e "$d/go" ]; do sleep 0.02; done
        status=0
        "$@" > "$d/a.output" 2>&1 || status=$?
        # Renamed into place: the test reads it as soon as it exists.
        echo "$status" > "$d/a.status.tmp" && mv "$d/a.status.tmp" "$d/a.status"
        # Still running when redlock-run wakes up, which must see its lock gone and end us.
        while [ ! -e "$d/end" ]; do sleep 0.02; done' holder-a "$d" "$@" "$a_last"
    wait_for 5 file_exists "$d/a.ready"
    A_FENCE=$(cat "$d/a.fence")

    # The host pauses: every process of the run stops, which is what no watchdog on the same
    # host can defend against (only the store's fence check can). redlock-run first, so that it
    # cannot react to its command stopping, then its watchdog, which would otherwise kill the
    # command at the lease end, then the command.
    local watchdog
    wait_for 5 watchdog_of "$RL_PID"
    watchdog=$(watchdog_of "$RL_PID")
    [ -n "$watchdog" ]
    kill -STOP "$RL_PID"
    kill -STOP "$watchdog"
    kill -STOP -- "-$(cat "$d/a.pgid")"
    # A's turn to write comes while it is frozen; nothing renews its lock.
    touch "$d/go"
    wait_for 10 key_absent "$name"

    run "$RL" -t 10s "$name" -- bash -c 'echo "$REDLOCK_FENCE" > "$0/b.fence"; exec "$@"' "$d" "$@" "$b_last"
    assert_success
    B_FENCE=$(cat "$d/b.fence")

    # The host resumes. A resumed host runs the command and redlock-run at once, and the
    # command's write can come before redlock-run gets to stop it; resuming the command first,
    # and redlock-run once the write is done, makes that late write happen on every run.
    kill -CONT -- "-$(cat "$d/a.pgid")"
    wait_for 10 file_exists "$d/a.status"
    A_STATUS=$(cat "$d/a.status")
    A_OUTPUT=$(cat "$d/a.output")
    kill -CONT "$watchdog"
    kill -CONT "$RL_PID"
    rl_finish 10
    assert_equal "$RL_STATUS" 76
    grep -q "lock '$name' lost" "$RL_ERR"
    # Fences only grow: B's is newer, which is what the store compares.
    [[ $A_FENCE =~ ^[0-9]+$ && $B_FENCE =~ ^[0-9]+$ ]]
    [ "$B_FENCE" -gt "$A_FENCE" ]
}

# The stale write was attempted, and refused by the store (the recipes' exit status 4).
assert_refused() {
    assert_equal "$A_STATUS" 4
    [[ $A_OUTPUT == *"refused"* ]] || { echo "A's write output: $A_OUTPUT" >&2; false; }
}

pg_row() { psql -X -q -At -v id="$1" <<<"SELECT body || '|' || last_fence FROM report WHERE id = :'id'"; }

@test "postgresql: a guarded UPDATE refuses the write of a holder paused past its lease" {
    # The UPDATE writes only rows that exist: the row is there before either holder.
    psql -X -q -v ON_ERROR_STOP=1 -c "INSERT INTO report VALUES ('update-row', 'initial', 0)"
    paused_holder pg-update "written by A" "written by B" \
        "$EXAMPLES/postgresql-write.sh" update update-row
    assert_refused
    assert_equal "$A_OUTPUT" "refused: 0 rows updated for row update-row with fence $A_FENCE (stored fence: $B_FENCE)"
    assert_equal "$(pg_row update-row)" "written by B|$B_FENCE"
}

@test "postgresql: INSERT ... ON CONFLICT DO UPDATE refuses the write of a holder paused past its lease" {
    # No row before: B's upsert creates it, A's must then leave it alone.
    [ -z "$(pg_row upsert-row)" ]
    paused_holder pg-upsert "written by A" "written by B" \
        "$EXAMPLES/postgresql-write.sh" upsert upsert-row
    assert_refused
    assert_equal "$(pg_row upsert-row)" "written by B|$B_FENCE"
}

@test "redis: the fence-comparing script refuses the write of a holder paused past its lease" {
    export REDIS_STORE_URL="$REDIS_URL"
    paused_holder redis-store "written by A" "written by B" "$EXAMPLES/redis-write.sh" report:data
    assert_refused
    assert_equal "$(cli "$REDIS_PORT" HGET report:data data)" "written by B"
    assert_equal "$(cli "$REDIS_PORT" HGET report:data fence)" "$B_FENCE"
}

@test "files: the fence-checked rename refuses the file of a holder paused past its lease" {
    local d=$BATS_TEST_TMPDIR
    mkdir "$d/shared"
    echo "written by A" > "$d/a.data"
    echo "written by B" > "$d/b.data"
    # The source is file-write.sh's first argument, the one that differs between the holders.
    printf '#!/bin/sh\nexec "%s" "$1" "%s"\n' "$EXAMPLES/file-write.sh" "$d/shared/report" > "$d/write"
    chmod +x "$d/write"
    paused_holder file-store "$d/a.data" "$d/b.data" "$d/write"
    assert_refused
    assert_equal "$(cat "$d/shared/report")" "written by B"
    assert_equal "$(cat "$d/shared/report.fence")" "$B_FENCE"
    # Nothing of A's copy is left behind in the shared directory.
    assert_equal "$(ls -A "$d/shared" | sort | tr '\n' ' ')" "report report.fence report.lock "
}

@test "every recipe lets one holder write more than once under its own fence" {
    local d=$BATS_TEST_TMPDIR
    mkdir "$d/shared"
    export REDIS_STORE_URL="$REDIS_URL" EXAMPLES
    # The second write carries the same fence as the first: the stores compare with "not older",
    # so a holder is never refused by its own earlier write.
    run "$RL" -t 10s twice -- bash -c '
        set -euo pipefail
        echo "$REDLOCK_FENCE" > "$0/fence"
        for body in first second; do
            "$EXAMPLES/postgresql-write.sh" upsert twice-row "$body"
            "$EXAMPLES/redis-write.sh" twice:data "$body"
            echo "$body" > "$0/$body.data"
            "$EXAMPLES/file-write.sh" "$0/$body.data" "$0/shared/report"
        done' "$d"
    assert_success
    local fence
    fence=$(cat "$d/fence")
    assert_equal "$(pg_row twice-row)" "second|$fence"
    assert_equal "$(cli "$REDIS_PORT" HGET twice:data data)" second
    assert_equal "$(cat "$d/shared/report")" second
    assert_equal "$(cat "$d/shared/report.fence")" "$fence"
}

@test "every recipe refuses to write without a numeric REDLOCK_FENCE (outside redlock-run)" {
    local d=$BATS_TEST_TMPDIR
    mkdir "$d/shared"
    echo data > "$d/data"
    export REDIS_STORE_URL="$REDIS_URL"
    local fence
    for fence in "" "12; DROP TABLE report"; do
        REDLOCK_FENCE=$fence run "$EXAMPLES/postgresql-write.sh" upsert unfenced-row data
        assert_equal "$status" 64
        REDLOCK_FENCE=$fence run "$EXAMPLES/redis-write.sh" unfenced:data data
        assert_equal "$status" 64
        REDLOCK_FENCE=$fence run "$EXAMPLES/file-write.sh" "$d/data" "$d/shared/report"
        assert_equal "$status" 64
    done
    [ -z "$(pg_row unfenced-row)" ]
    key_absent unfenced:data
    [ -z "$(ls -A "$d/shared")" ]
}

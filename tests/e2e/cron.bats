#!/usr/bin/env bats
# The cron and deploy features: --min-hold, --max-runtime, reentrancy across the process tree,
# --hold-info and the busy message naming the holder, --syslog.
load helpers

setup() {
    redis_start
    T="$BATS_TEST_TMPDIR"
}
teardown() {
    # by pid: a bare `wait` would also wait for the redis-server started in setup
    local pid
    for pid in ${HOLDER:-} ${LISTENER:-}; do
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    [ -n "${SOCK_DIR:-}" ] && rm -rf "$SOCK_DIR"
    redis_stop
}

pttl_between() { local t; t=$(cli "$REDIS_PORT" PTTL "$1"); [ "$t" -ge "$2" ] && [ "$t" -le "$3" ]; }
file_has() { grep -q -- "$2" "$1" 2>/dev/null; }

# --- min-hold ------------------------------------------------------------------------------------

@test "min-hold keeps the key with the rest of the hold as its TTL, and a late run is busy" {
    run "$RL" --min-hold 5s daily -- sh -c 'echo "$REDLOCK_TOKEN" > "$0"' "$T/token"
    assert_success
    [ "$(cli "$REDIS_PORT" GET daily)" = "$(cat "$T/token")" ]
    pttl_between daily 3500 5000
    run "$RL" daily -- touch "$T/second"
    assert_failure 75
    assert_output --partial "lock 'daily' is held by"
    [ ! -e "$T/second" ]
}

@test "min-hold from REDLOCK_MIN_HOLD shortens the holder info's TTL too" {
    REDLOCK_MIN_HOLD=4s run "$RL" -v --hold-info daily -- true
    assert_success
    assert_output --regexp "kept lock 'daily' for another [0-9.]+s \(--min-hold 4s\)"
    pttl_between daily 2500 4000
    pttl_between '{daily}:info' 2500 4000
}

@test "a command that runs longer than min-hold releases the lock at once" {
    run "$RL" --min-hold 200ms daily -- sleep 0.4
    assert_success
    key_absent daily
    key_absent '{daily}:info'
}

# --- max-runtime ---------------------------------------------------------------------------------

@test "max-runtime sends SIGTERM to the command, releases the lock and exits 124" {
    local start=$SECONDS
    run "$RL" --max-runtime 300ms job -- sh -c 'trap "echo TERM > \"$0\"; exit 0" TERM; sleep 30 & wait' "$T/got"
    assert_failure 124
    assert_output --partial "lock 'job' ran longer than --max-runtime 300ms; sending SIGTERM"
    [ "$(cat "$T/got")" = TERM ]
    [ $((SECONDS - start)) -lt 10 ]
    key_absent job
}

# --- reentrancy ----------------------------------------------------------------------------------
# The nested runs find Redis through REDLOCK_URL, which the outer run passes on only with
# --keep-env.

@test "a nested run for the same lock runs its command once, at once, without taking the lock" {
    local start=$SECONDS
    run "$RL" --keep-env deploy -- sh -c '
        tok=$(redis-cli -p "$1" GET deploy)
        "$0" --wait 30s deploy -- sh -c "echo inner:\$REDLOCK_TOKEN >> \"\$0\"" "$2"
        echo "nested=$?"
        [ "$(redis-cli -p "$1" GET deploy)" = "$tok" ] && echo still-held' \
        "$RL" "$REDIS_PORT" "$T/log"
    assert_success
    assert_line nested=0
    assert_line still-held
    [ "$(wc -l < "$T/log")" -eq 1 ]
    assert_regex "$(cat "$T/log")" '^inner:[0-9a-f]{32}$'
    [ $((SECONDS - start)) -lt 10 ]
    key_absent deploy
}

@test "a nested run keeps 127 for a missing command" {
    run "$RL" --keep-env deploy -- sh -c '"$0" deploy -- no-such-command-here; echo "nested=$?"' "$RL"
    assert_success
    assert_line nested=127
}

@test "a nested run whose inherited token is no longer current refuses with 76" {
    run "$RL" --keep-env deploy -- sh -c 'REDLOCK_TOKEN=00000000000000000000000000000000 "$0" deploy -- touch "$1"
        echo "nested=$?"' "$RL" "$T/ran"
    assert_success
    assert_line nested=76
    assert_output --partial "no longer held by the parent redlock-run"
    [ ! -e "$T/ran" ]
}

@test "a nested run that cannot reach Redis to check the token does not run" {
    local port
    port=$(free_port)
    REDLOCK_KEY=deploy REDLOCK_TOKEN=0123456789abcdef0123456789abcdef \
        REDLOCK_REDIS="127.0.0.1:$port/0" \
        run "$RL" -u "redis://127.0.0.1:$port" --connect-timeout 500ms deploy -- touch "$T/ran"
    assert_failure 69
    [ ! -e "$T/ran" ]
}

@test "a nested run for another lock takes that lock normally" {
    run "$RL" --keep-env outer -- sh -c '
        "$0" inner -- sh -c "echo \$REDLOCK_NAME; redis-cli -p $1 EXISTS outer inner"' "$RL" "$REDIS_PORT"
    assert_success
    assert_line inner
    assert_line 2
    key_absent outer
    key_absent inner
}

@test "the same name on another Redis database nests as a separate lock" {
    run "$RL" deploy -- sh -c '"$0" -u "redis://127.0.0.1:$1/1" deploy -- true; echo "nested=$?"' \
        "$RL" "$REDIS_PORT"
    assert_success
    assert_line nested=0
}

# --- hold-info and the busy message --------------------------------------------------------------

@test "the busy message names the holder's host, pid, user and how long it has held the lock" {
    hold_until report "$T/go" --hold-info
    run "$RL" report -- touch "$T/ran"
    assert_failure 75
    assert_output --regexp "^redlock-run: lock 'report' is held by $(hostname) pid $HOLDER \(user $(id -un)\) for [0-9.]+m?s, expires in [0-9.]+s; not running the command$"
    [ ! -e "$T/ran" ]
    touch "$T/go"
    wait "$HOLDER"
}

@test "without --hold-info the busy message still names the holder; the command line is not recorded" {
    hold_until report "$T/go"
    run "$RL" report -- true
    assert_failure 75
    assert_output --regexp "lock 'report' is held by $(hostname) pid $HOLDER \(user $(id -un)\) for [0-9.]+m?s, expires in"
    [ "$(cli "$REDIS_PORT" HEXISTS '{report}:info' command)" = 0 ]
    [ "$(cli "$REDIS_PORT" HGET '{report}:info' pid)" = "$HOLDER" ]
    touch "$T/go"
    wait "$HOLDER"
}

@test "-E 0 -q on a busy lock prints nothing and exits 0" {
    hold_until report "$T/go" --hold-info
    run "$RL" -E 0 -q report -- touch "$T/ran"
    assert_success
    assert_output ''
    [ ! -e "$T/ran" ]
    touch "$T/go"
    wait "$HOLDER"
}

# (Without a ledger: a run with one keeps its holder record past the lease until its end is
# recorded, so that a run that dies without a trace shows as abandoned: the next test.)
@test "hold info shares the lock's TTL, is renewed with it and released with it" {
    "$RL" --hold-info --ledger-size 0 --ttl 1s report -- sh -c 'sleep 1.6; redis-cli -p "$0" PTTL "{report}:info" > "$1"' \
        "$REDIS_PORT" "$T/pttl" &
    HOLDER=$!
    wait_for 5 key_exists '{report}:info'
    pttl_between '{report}:info' 1 1000
    [ "$(cli "$REDIS_PORT" HGET '{report}:info' token)" = "$(cli "$REDIS_PORT" GET report)" ]
    [ "$(cli "$REDIS_PORT" HGET '{report}:info' pid)" = "$HOLDER" ]
    [ "$(cli "$REDIS_PORT" HGET '{report}:info' command)" = "sh -c sleep 1.6; redis-cli -p \"\$0\" PTTL \"{report}:info\" > \"\$1\" $REDIS_PORT $T/pttl" ]
    wait "$HOLDER"
    # still there after more than one ttl: the renewals extended it
    [ "$(cat "$T/pttl")" -gt 0 ]
    key_absent report
    key_absent '{report}:info'
}

@test "with a ledger the hold info has no expiry while held, and goes with the release" {
    hold_until report "$T/go" --hold-info
    wait_for 5 key_exists '{report}:info'
    assert_equal "$(cli "$REDIS_PORT" PTTL '{report}:info')" -1
    [ "$(cli "$REDIS_PORT" HGET '{report}:info' ledger)" = 100 ]
    touch "$T/go"
    wait "$HOLDER"
    key_absent report
    key_absent '{report}:info'
}

@test "a very long command line is recorded cut to about 1 KiB" {
    run "$RL" --hold-info long -- sh -c 'redis-cli -p "$0" HGET "{long}:info" command' \
        "$REDIS_PORT" "$(printf 'x%.0s' $(seq 3000))"
    assert_success
    [ "${#output}" -le 1024 ]
    [ "${#output}" -ge 1000 ]
    assert_output --regexp '\.\.\.$'
}

# --- syslog --------------------------------------------------------------------------------------

# A unix datagram listener standing in for /dev/log; each datagram becomes a line of $T/syslog.
syslog_listen() {
    SOCK_DIR=$(mktemp -d /tmp/rl-syslog.XXXXXX)  # short: sun_path holds 108 bytes
    export REDLOCK_SYSLOG_SOCKET="$SOCK_DIR/log"
    /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
out = open(sys.argv[2], "a", buffering=1)
while True:
    out.write(s.recv(65536).decode() + "\n")' "$REDLOCK_SYSLOG_SOCKET" "$T/syslog" &
    LISTENER=$!
    wait_for 5 test -S "$REDLOCK_SYSLOG_SOCKET"
}

@test "--syslog sends the messages to syslog with facility user, tag and pid" {
    syslog_listen
    run "$RL" --syslog -v logged -- true
    assert_success
    wait_for 5 file_has "$T/syslog" "released lock 'logged'"
    # <14> is user.info (verbose messages); no "redlock-run: " inside the message
    grep -E "^<14>[A-Z][a-z]{2} [ 0-9][0-9] [0-9]{2}:[0-9]{2}:[0-9]{2} redlock-run\[[0-9]+\]: acquired lock 'logged' on " "$T/syslog"
}

@test "REDLOCK_SYSLOG sends the busy notice to syslog" {
    syslog_listen
    hold_until logged "$T/go" --hold-info
    REDLOCK_SYSLOG=1 run "$RL" logged -- true
    assert_failure 75
    # <13> is user.notice
    wait_for 5 file_has "$T/syslog" "lock 'logged' is held by $(hostname) pid $HOLDER"
    grep -E "^<13>.* redlock-run\[[0-9]+\]: lock 'logged' is held by " "$T/syslog"
    touch "$T/go"
    wait "$HOLDER"
}

@test "without --syslog nothing goes to syslog" {
    syslog_listen
    run "$RL" -v unlogged -- true
    assert_success
    # datagrams arrive in order: once the marker is in, the first run's lines would be too
    "$RL" --syslog -v marker -- true
    wait_for 5 file_has "$T/syslog" "released lock 'marker'"
    ! grep -q unlogged "$T/syslog"
}

@test "--syslog without a syslog daemon still runs the command" {
    REDLOCK_SYSLOG_SOCKET=/nonexistent/log run "$RL" --syslog nodaemon -- echo ran
    assert_success
    assert_output ran
}

@test "--help-all documents the cron options" {
    run "$RL" --help-all
    assert_success
    assert_output --partial --min-hold
    assert_output --partial --max-runtime
    assert_output --partial --syslog
    assert_output --partial --hold-info
    assert_output --partial "124 --max-runtime exceeded"
}

# Helpers for the failure-mode tests (ambiguous.bats, transient.bats, races.bats): a proxy that
# loses chosen replies on their way from the real redis-server, and MONITOR capture.
# shellcheck shell=bash

# proxy_start [drop_proxy.py OPTIONS...]: starts tests/e2e/drop_proxy.py in front of the test
# server; sets PROXY_PID, PROXY_PORT, PROXY_URL and PROXY_LOG (one line per dropped or delayed
# command).
proxy_start() {
    PROXY_LOG="$BATS_TEST_TMPDIR/proxy.log"
    local port_file="$BATS_TEST_TMPDIR/proxy.port"
    rm -f "$port_file" "$PROXY_LOG"
    /usr/bin/python3 "$BATS_TEST_DIRNAME/drop_proxy.py" "$port_file" "$REDIS_PORT" \
        --log "$PROXY_LOG" "$@" 3>&- &
    PROXY_PID=$!
    wait_for 5 file_exists "$port_file"
    PROXY_PORT=$(cat "$port_file")
    PROXY_URL="redis://127.0.0.1:$PROXY_PORT"
}

proxy_stop() {
    [ -n "${PROXY_PID:-}" ] || return 0
    kill "$PROXY_PID" 2>/dev/null || true
    wait "$PROXY_PID" 2>/dev/null || true
    PROXY_PID=
}

# monitor_start: records every command the server runs (MONITOR) in $MONITOR_OUT, until
# monitor_stop. Returns once MONITOR is in place.
monitor_start() {
    MONITOR_OUT="$BATS_TEST_TMPDIR/monitor.out"
    cli "$REDIS_PORT" MONITOR >"$MONITOR_OUT" 2>/dev/null 3>&- &
    MONITOR_PID=$!
    wait_for 5 file_contains "$MONITOR_OUT" OK
}

monitor_stop() {
    [ -n "${MONITOR_PID:-}" ] || return 0
    kill "$MONITOR_PID" 2>/dev/null || true
    wait "$MONITOR_PID" 2>/dev/null || true
    MONITOR_PID=
}

# The SHA1 a script is sent under (EVALSHA), as Redis shows it in MONITOR. The scripts that touch
# the waiters' queue (QUEUE_SCRIPTS in CMakeLists.txt) are sent with its functions prepended, and
# those that record a run (LEDGER_SCRIPTS) with the record's functions after them, and those that
# tell an abandoned run (ABANDONED_SCRIPTS, OPEN_RUNS_SCRIPTS) with its functions after those, and
# those that take a free lock (TAKE_SCRIPTS) with lib/take.lua after those, and those that admit
# a shared holder (SHARE_SCRIPTS) with lib/share.lua last.
script_sha() {
    local dir="$BATS_TEST_DIRNAME/../../src/lock/scripts"
    case $1 in
        permits)
            cat "$dir/lib/queue.lua" "$dir/lib/ledger.lua" "$dir/lib/abandoned.lua" \
                "$dir/lib/open_runs.lua" "$dir/$1.lua" ;;
        ledger | shared)
            cat "$dir/lib/queue.lua" "$dir/lib/ledger.lua" "$dir/lib/abandoned.lua" \
                "$dir/lib/open_runs.lua" "$dir/lib/take.lua" "$dir/lib/share.lua" "$dir/$1.lua" ;;
        acquire)
            cat "$dir/lib/queue.lua" "$dir/lib/abandoned.lua" "$dir/lib/take.lua" "$dir/$1.lua" ;;
        release)
            cat "$dir/lib/queue.lua" "$dir/lib/abandoned.lua" "$dir/lib/open_runs.lua" \
                "$dir/lib/take.lua" "$dir/lib/share.lua" "$dir/$1.lua" ;;
        abandon | force_release)
            cat "$dir/lib/queue.lua" "$dir/$1.lua" ;;
        last_runs | history)
            cat "$dir/lib/abandoned.lua" "$dir/lib/open_runs.lua" "$dir/$1.lua" ;;
        *) cat "$dir/$1.lua" ;;
    esac | sha1sum | cut -d' ' -f1
}

# file_matches FILE ERE: like file_contains, with an extended regular expression.
file_matches() { grep -qE -- "$2" "$1" 2>/dev/null; }

# queue_length_is NAME N: lock NAME's waiters' queue holds N tokens (for wait_for, which must
# re-read it on every try).
queue_length_is() { [ "$(cli "$REDIS_PORT" LLEN "{$1}:wait")" = "$2" ]; }

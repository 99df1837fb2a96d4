# Shared set-up for the end-to-end tests: a throwaway redis-server on a free loopback port in a
# temporary directory, the binary under test, and bounded waiting helpers.
# shellcheck shell=bash

load '/usr/lib/bats/bats-support/load'
load '/usr/lib/bats/bats-assert/load'

RL="${REDLOCK_RUN:-$BATS_TEST_DIRNAME/../../build/redlock-run}"

# Starts redis-server with extra arguments "$@"; sets REDIS_PORT, REDIS_PID, REDIS_DIR, REDIS_URL
# and REDLOCK_URL (so the tool finds it without -u).
redis_start() {
    REDIS_DIR=$(mktemp -d "${BATS_TEST_TMPDIR:-/tmp}/redis.XXXXXX")
    local try
    for try in 1 2 3 4 5 6 7 8; do
        REDIS_PORT=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
        redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$REDIS_DIR" --save '' \
            --appendonly no --daemonize no --logfile "$REDIS_DIR/redis.log" \
            --unixsocket "$REDIS_DIR/redis.sock" --unixsocketperm 700 "$@" &
        REDIS_PID=$!
        if wait_for 5 rcli_quiet PING; then
            export REDIS_PORT REDIS_PID REDIS_DIR
            export REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
            export REDLOCK_URL="$REDIS_URL"
            return 0
        fi
        kill -9 "$REDIS_PID" 2>/dev/null || true
        wait "$REDIS_PID" 2>/dev/null || true
    done
    echo "could not start redis-server" >&2
    return 1
}

redis_stop() {
    [ -n "${REDIS_PID:-}" ] || return 0
    kill -CONT "$REDIS_PID" 2>/dev/null || true
    kill -TERM "$REDIS_PID" 2>/dev/null || true
    wait "$REDIS_PID" 2>/dev/null || true
    REDIS_PID=
}

# redis-cli against the test server; extra connection options may be set in RCLI_OPTS.
rcli() { redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ${RCLI_OPTS:-} "$@"; }
rcli_quiet() { [ "$(rcli "$@" 2>/dev/null)" = PONG ]; }

# wait_for SECONDS COMMAND...: polls COMMAND every 20ms until it succeeds; fails after SECONDS.
wait_for() {
    local limit=$1
    shift
    local deadline=$((SECONDS + limit))
    until "$@"; do
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 0.02
    done
}

# A port on which nothing listens.
free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

key_exists() { [ "$(rcli EXISTS "$1")" = 1 ]; }
key_absent() { [ "$(rcli EXISTS "$1")" = 0 ]; }
file_exists() { [ -e "$1" ]; }
pid_gone() { ! kill -0 "$1" 2>/dev/null; }

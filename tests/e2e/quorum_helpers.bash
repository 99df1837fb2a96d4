# Several independent redis-servers for the Redlock quorum tests (several -u). Each node i has
# Q_PORT[i], Q_PID[i] and Q_DIR[i]; QUORUM_URL is their comma-separated list (as REDLOCK_URL
# takes it). No persistence: a restarted node comes back empty, as the fencing tests need.
# shellcheck shell=bash

# quorum_start N: starts N servers on free loopback ports.
quorum_start() {
    Q_PORT=() Q_PID=() Q_DIR=()
    local i urls=""
    for ((i = 0; i < $1; i++)); do
        Q_DIR[i]=$(mktemp -d "${BATS_TEST_TMPDIR:-/tmp}/qnode.XXXXXX")
        launch "${Q_DIR[i]}" redis_spawn || return 1
        Q_PORT[i]=$LAUNCH_PORT Q_PID[i]=$LAUNCH_PID
        urls+="${urls:+,}redis://127.0.0.1:${Q_PORT[i]}"
    done
    export QUORUM_URL="$urls"
}

# q_exec I: (re)starts node I on its port and directory.
q_exec() {
    redis_spawn "${Q_PORT[$1]}" "${Q_DIR[$1]}"
    Q_PID[$1]=$!
}

q_ping() { resp "${Q_PORT[$1]}" PING && [ "$REPLY" = +PONG ]; }

# qcli I ARGS...: redis-cli against node I.
qcli() {
    local i=$1
    shift
    redis-cli -h 127.0.0.1 -p "${Q_PORT[i]}" "$@"
}

# q_down I: stops node I (its data is gone: no persistence).
q_down() {
    [ -n "${Q_PID[$1]:-}" ] || return 0
    kill -CONT "${Q_PID[$1]}" 2>/dev/null || true
    kill -TERM "${Q_PID[$1]}" 2>/dev/null || true
    wait "${Q_PID[$1]}" 2>/dev/null || true
    Q_PID[$1]=
}

# q_up I: starts node I again, empty, on its old port.
q_up() {
    q_exec "$1"
    wait_for 10 q_ping "$1"
}

q_freeze() { kill -STOP "${Q_PID[$1]}"; }
q_thaw() { kill -CONT "${Q_PID[$1]}"; }

quorum_stop() {
    local i
    for i in "${!Q_PID[@]}"; do q_down "$i"; done
}

# The first N node URLs, comma-separated.
q_urls() {
    local i urls=""
    for ((i = 0; i < $1; i++)); do urls+="${urls:+,}redis://127.0.0.1:${Q_PORT[i]}"; done
    echo "$urls"
}

# How many nodes hold the key $1 with the value $2.
q_holding() {
    local i n=0
    for i in "${!Q_PORT[@]}"; do
        [ -n "${Q_PID[i]}" ] || continue
        [ "$(qcli "$i" GET "$1" 2>/dev/null)" = "$2" ] && n=$((n + 1))
    done
    echo "$n"
}

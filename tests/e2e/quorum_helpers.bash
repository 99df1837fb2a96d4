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
        [ "$(cli "${Q_PORT[$i]}" GET "$1" 2>/dev/null)" = "$2" ] && n=$((n + 1))
    done
    echo "$n"
}

# Servers shared by a whole file: quorum_file_start N in setup_file starts them and exports their
# ports and pids; quorum_file_restore in setup gives each test its Q_PORT and Q_PID back (bats
# runs each test in a process of its own); quorum_file_stop in teardown_file stops them.
quorum_file_start() {
    quorum_start "$1"
    export QUORUM_URL Q_PORTS="${Q_PORT[*]}" Q_PIDS="${Q_PID[*]}"
}
quorum_file_restore() {
    read -ra Q_PORT <<<"$Q_PORTS"
    read -ra Q_PID <<<"$Q_PIDS"
}
quorum_file_stop() {
    quorum_file_restore
    quorum_stop
}

# on_majority CHECK ARGS...: CHECK I ARGS... succeeds for a majority of the nodes I. A node that
# a loaded machine let time out may lack a queue entry or a hold until the next attempt; what
# the tests check (order, exclusion) is promised for what a majority has.
on_majority() {
    local i k=0
    for i in "${!Q_PORT[@]}"; do
        "$1" "$i" "${@:2}" && k=$((k + 1))
    done
    [ "$k" -ge $((${#Q_PORT[@]} / 2 + 1)) ]
}
# On node I: NAME's queue holds K waiters; NAME's key exists; NAME has K shared holders.
q_queued() { [ "$(cli "${Q_PORT[$1]}" ZCARD "{$2}:wait")" = "$3" ]; }
q_held() { [ "$(cli "${Q_PORT[$1]}" EXISTS "$2")" = 1 ]; }
q_shared() { [ "$(cli "${Q_PORT[$1]}" ZCARD "{$2}:shared")" = "$3" ]; }
queued_on_majority() { on_majority q_queued "$@"; }
held_on_majority() { on_majority q_held "$@"; }
shared_on_majority() { on_majority q_shared "$@"; }

# q_nothing_left KEY...: none of the keys exists on any node.
q_nothing_left() {
    local i
    for i in "${!Q_PORT[@]}"; do
        [ "$(cli "${Q_PORT[$i]}" EXISTS "$@")" = 0 ] || return 1
    done
}

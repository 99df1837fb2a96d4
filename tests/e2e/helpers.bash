# Shared set-up for the end-to-end tests: a throwaway redis-server on a free loopback port in a
# temporary directory, the binary under test, and bounded waiting helpers.
# shellcheck shell=bash

# bats runs a DEBUG trap before every command, which records a stack trace for a failure's
# report unless the command's file lies under an excluded path. The helpers here are most of the
# commands a test runs (polling loops, server start-up), and the trace cost ~0.2 ms of CPU each:
# excluded, four files' tests took 11-14% less CPU. A test file is not excluded (bats runs a
# preprocessed copy of it from its own temp directory), so a failure inside a helper is still
# reported at the test's line that called it, and the helper's failing line with it.
bats_add_debug_exclude_path "$BATS_TEST_DIRNAME/"

# bats-support and bats-assert, sourced file by file: their load.bash runs `$(dirname ...)` once
# per file, 15 forks that bats repeats before every test (~80 ms a test on a 2-core VM, a minute
# of the whole suite). Support first: assert's functions call it.
for _lib in /usr/lib/bats/bats-support/src/{output,error,lang}.bash /usr/lib/bats/bats-assert/src/*.bash; do
    # shellcheck source=/dev/null
    source "$_lib"
done
unset _lib

RL="${REDLOCK_RUN:-$BATS_TEST_DIRNAME/../../build/redlock-run}"

# Every server a test starts is seconds old and empty, which is what a restart without
# persistence looks like: with the restart guard's default (the TTL) each new name would be held
# back that long. Off here; restart_guard.bats turns it on where it is the point.
export REDLOCK_RESTART_GUARD=0

# The memory of which scripts each server ran (src/redis/script_memory.hpp) is the test's own,
# fresh for each test (bats sources this file again for every test), never the user's: the
# first run of a test on a server sends the scripts' bodies, later ones their digests.
export XDG_CACHE_HOME="${BATS_TEST_TMPDIR:-${BATS_FILE_TMPDIR:-/nonexistent/none}}/xdg-cache"

# sanitized: the binary under test was built with ASan or TSan. Asked once per file (ldd is a
# script that starts the loader) and exported, so that every test process inherits the answer.
sanitized() {
    if [ -z "${RL_SANITIZED:-}" ]; then
        RL_SANITIZED=no
        if ldd "$RL" 2>/dev/null | grep -Eq 'lib(a|t)san'; then RL_SANITIZED=yes; fi
        export RL_SANITIZED
    fi
    [ "$RL_SANITIZED" = yes ]
}
sanitized || true

# Starts redis-server with extra arguments "$@"; sets REDIS_PORT, REDIS_PID, REDIS_DIR, REDIS_URL
# and REDLOCK_URL (so the tool finds it without -u).
redis_start() {
    REDIS_DIR=$(mktemp -d "${BATS_TEST_TMPDIR:-/tmp}/redis.XXXXXX")
    REDIS_ARGS=(--unixsocket "$REDIS_DIR/redis.sock" --unixsocketperm 700 "$@")
    launch "$REDIS_DIR" redis_spawn "${REDIS_ARGS[@]}" || return 1
    REDIS_ARGS=("${LAUNCH_ARGS[@]}")
    export REDIS_PORT=$LAUNCH_PORT REDIS_PID=$LAUNCH_PID REDIS_DIR
    export REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
    export REDLOCK_URL="$REDIS_URL"
}

# launch DIR SPAWN [ARGS...]: the one way every topology's servers start. Runs `SPAWN PORT DIR
# ARGS...` (which starts a redis-server or redis-sentinel in the background, logging to
# DIR/redis.log) on a free loopback port and waits until the server listens; a port lost to a
# parallel test's server is retried on a new one. A second port (a TLS port) is written @PORT2@
# in ARGS and is picked afresh on every try too: one picked once, outside the loop, failed
# every try when a parallel test took it (tls.bats 6 in the project's CI at 9026be6).
# Sets LAUNCH_PORT, LAUNCH_PORT2, LAUNCH_PID and LAUNCH_ARGS (ARGS as the server got them).
launch() {
    local dir=$1 spawn=$2 try
    shift 2
    for try in 1 2 3 4 5 6 7 8; do
        LAUNCH_PORT=$(free_port) || continue
        # Only a server that asks for it pays for a second port (a fork and a probe a try).
        LAUNCH_PORT2=
        if [[ "$*" == *@PORT2@* ]]; then
            LAUNCH_PORT2=$(free_port) || continue
            [ "$LAUNCH_PORT2" != "$LAUNCH_PORT" ] || continue
        fi
        LAUNCH_ARGS=("${@//@PORT2@/$LAUNCH_PORT2}")
        rm -f "$dir/redis.log"
        "$spawn" "$LAUNCH_PORT" "$dir" "${LAUNCH_ARGS[@]}"
        LAUNCH_PID=$!
        server_ready "$LAUNCH_PID" "$dir/redis.log" 10 && return 0
        kill -9 "$LAUNCH_PID" 2>/dev/null || true
        wait "$LAUNCH_PID" 2>/dev/null || true
    done
    echo "could not start a server in $dir" >&2
    return 1
}

# redis_spawn PORT DIR [ARGS...]: redis-server in the background with the suite's defaults (no
# persistence, its log in DIR/redis.log) and ARGS, which override them.
redis_spawn() {
    local port=$1 dir=$2
    shift 2
    redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
        --daemonize no --logfile "$dir/redis.log" "$@" >/dev/null 2>&1 3>&- &
}

# server_ready PID LOG SECONDS: the server PID, logging to LOG, has bound its ports and accepts
# commands. Its log says so only once it listens (a sentinel, which never logs "Ready", names
# its mode once it listens), so a server that lost its port to another test's (and exits) is
# never mistaken for that one; fails as soon as it has exited.
server_ready() {
    local deadline=$((SECONDS + $3)) log
    while kill -0 "$1" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
        log=
        [ -r "$2" ] && IFS= read -r -d '' log <"$2" || true
        [[ $log == *"Ready to accept connections"* || $log == *"Running mode=sentinel"* ]] && return 0
        nap 0.02
    done
    return 1
}

# Stops the server (a clean shutdown: it writes its append-only file if it has one) and starts it
# again on the same port, directory and arguments.
redis_restart() {
    redis_stop
    redis_spawn "$REDIS_PORT" "$REDIS_DIR" "${REDIS_ARGS[@]}"
    REDIS_PID=$!
    export REDIS_PID
    wait_for 10 pings "$REDIS_PORT"
}

redis_stop() {
    [ -n "${REDIS_PID:-}" ] || return 0
    kill -CONT "$REDIS_PID" 2>/dev/null || true
    kill -TERM "$REDIS_PID" 2>/dev/null || true
    wait "$REDIS_PID" 2>/dev/null || true
    REDIS_PID=
}

# cli PORT ARGS...: `redis-cli -h 127.0.0.1 -p PORT ARGS...`, its output as redis-cli writes it to
# a pipe (raw: a bulk string as it is, nil and an empty array as an empty line, an error as its
# text and an empty line, an array's elements a line each, nested ones flattened; exit status 0
# even for an error reply, 1 and redis-cli's message when nothing listens), spoken by bash over
# /dev/tcp. A redis-cli costs about 12 ms of CPU to start on a 2-core VM, where the suite is
# CPU-bound, and the helpers started 2,000 a pass. What this does not speak (an option such as
# -a or --cluster, a password in REDISCLI_AUTH, a command whose reply is not one reply) goes to
# the real redis-cli. The one client of every test: the server of helpers.bash is
# `cli "$REDIS_PORT"`, a quorum's node I `cli "${Q_PORT[I]}"`. CLI_OPTS, when set, are connection
# options for every call (`-a PASSWORD --no-auth-warning` for a server with requirepass; not
# REDISCLI_AUTH, which redlock-run itself would read).
cli() {
    local port=$1
    shift
    if [ -n "${CLI_OPTS:-}" ]; then
        # shellcheck disable=SC2086 # options, as words
        redis-cli -h 127.0.0.1 -p "$port" $CLI_OPTS "$@"
        return
    fi
    if [ $# -eq 0 ] || [[ "$1" == -* ]] || [ -n "${REDISCLI_AUTH:-}" ]; then
        redis-cli -h 127.0.0.1 -p "$port" "$@"
        return
    fi
    case "${1,,}" in
    shutdown | monitor | subscribe | psubscribe | ssubscribe | sync | psync | quit | reset | hello)
        redis-cli -h 127.0.0.1 -p "$port" "$@"
        return
        ;;
    esac
    local LC_ALL=C fd out= end=$'\n' status=0
    # redis-cli prints these replies (text that ends in its own newline) without one of its own.
    case "${1,,} ${2,,}" in
    "info "* | "lolwut "* | "client list" | "client info" | "memory doctor" | "memory malloc-stats" | \
        "latency doctor" | "debug htstats"*) end= ;;
    "cluster nodes" | "cluster info") [ $# -ne 2 ] || end= ;;
    esac
    if ! { exec {fd}<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
        echo "Could not connect to Redis at 127.0.0.1:$port: Connection refused" >&2
        return 1
    fi
    if resp_send "$fd" "$@" 2>/dev/null && _cli_reply "$fd"; then
        printf '%s%s' "$out" "$end"
    else
        echo "Error: Server closed the connection" >&2
        status=1
    fi
    exec {fd}>&-
    return "$status"
}

# _cli_reply FD: reads one reply from FD and appends its raw form to cli's `out`.
_cli_reply() {
    local fd=$1 line n i body
    IFS= read -r -u "$fd" line || return 1
    line=${line%$'\r'}
    case "${line:0:1}" in
    + | :) out+=${line:1} ;;
    -) out+=${line:1}$'\n' ;;
    \$)
        n=${line:1}
        [ "$n" -ge 0 ] || return 0
        body=
        # LC_ALL=C (cli's): N bytes, which a multi-byte character would not be otherwise.
        [ "$n" -eq 0 ] || IFS= read -r -N "$n" -u "$fd" body || return 1
        [ "${#body}" -eq "$n" ] || return 1
        out+=$body
        IFS= read -r -u "$fd" line || return 1
        ;;
    \*)
        n=${line:1}
        for ((i = 0; i < n; i++)); do
            [ "$i" -eq 0 ] || out+=$'\n'
            _cli_reply "$fd" || return 1
        done
        ;;
    *) return 1 ;;
    esac
}
# pings PORT: the server on PORT answers PING (with CLI_OPTS, through redis-cli).
pings() {
    if [ -z "${CLI_OPTS:-}" ]; then resp "$1" PING && [ "$REPLY" = +PONG ]; else [ "$(cli "$1" PING 2>/dev/null)" = PONG ]; fi
}

# resp PORT ARGS...: sends one command to the server on 127.0.0.1:PORT through bash's /dev/tcp
# and sets REPLY to the first line of its reply (type byte included: +PONG, :1, $5, -ERR ...).
# No process is started: the polling helpers call this every 20ms, and a redis-cli each time
# cost about 12ms of CPU on a 2-core VM, where the suite is CPU-bound.
resp() {
    local LC_ALL=C port=$1 fd status=0
    shift
    REPLY=
    { exec {fd}<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || return 1
    { resp_send "$fd" "$@" && IFS= read -r -t 5 -u "$fd" REPLY; } 2>/dev/null || status=1
    exec {fd}>&-
    REPLY=${REPLY%$'\r'}
    return "$status"
}

# resp_send FD ARGS...: writes ARGS to FD as one command in RESP. Byte lengths: the callers set
# LC_ALL=C.
resp_send() {
    local fd=$1 arg req
    shift
    req="*$#"$'\r\n'
    for arg in "$@"; do req+="\$${#arg}"$'\r\n'"$arg"$'\r\n'; done
    printf '%s' "$req" >&"$fd"
}

# nap SECONDS: sleeps without starting a process (a read that times out on a pipe nobody
# writes), for the polling loops below; the pipe is made once per shell.
nap() {
    [ -n "${_NAP_FD:-}" ] || exec {_NAP_FD}<> <(:)
    read -r -t "$1" -u "$_NAP_FD" _ || true
}

# wait_for SECONDS COMMAND...: polls COMMAND until it succeeds; fails after SECONDS, saying what
# it waited for and, when a test's redlock-run was started by rl_start, whether it still runs and
# what it printed: a CI log then tells a slow start from an early exit.
# Every 20ms for the first second, then every 100ms: the long waits (a failover, a lease running
# out, a sanitizer build starting up) were most of the polls, and a poll is a fork or two (a
# redis-cli, a command substitution). The suite is CPU-bound on 2 cores, so fewer polls of a
# long wait finish the suite sooner than noticing its end 80ms earlier.
# WAIT_SCALE (set by ctest, 3 in a sanitizer build) multiplies SECONDS.
wait_for() {
    local limit=$(($1 * ${WAIT_SCALE:-1})) polls=0
    shift
    local deadline=$((SECONDS + limit))
    until "$@"; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "wait_for: '$*' still false after ${limit}s" >&2
            if [ -n "${RL_PID:-}" ] && [ -e "${RL_ERR:-}" ]; then
                local state="has exited"
                pid_gone "$RL_PID" || state="still runs"
                echo "redlock-run $RL_PID $state; stderr:" >&2
                cat "$RL_ERR" >&2
            fi
            return 1
        fi
        if [ $((polls += 1)) -le 50 ]; then nap 0.02; else nap 0.1; fi
    done
}

# A port on which nothing listens now, below Linux's ephemeral range (32768-60999) so that no
# client connection holds it: a server that still loses it to another test exits, and the
# launchers try another (server_ready). Drawn in bash: a python3 for it cost 34ms of CPU.
free_port() {
    local port fd
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        port=$((20000 + (RANDOM * 32768 + RANDOM) % 12700))
        if { exec {fd}<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null; then
            exec {fd}>&-
            continue
        fi
        echo "$port"
        return 0
    done
    return 1
}

key_exists() { key_count "$1" && [ "$REPLY" = :1 ]; }
key_absent() { key_count "$1" && [ "$REPLY" = :0 ]; }
key_count() {
    if [ -z "${CLI_OPTS:-}" ]; then resp "$REDIS_PORT" EXISTS "$1"; else REPLY=:$(cli "$REDIS_PORT" EXISTS "$1"); fi
}
file_exists() { [ -e "$1" ]; }
# lines_are FILE N: FILE exists and has exactly N lines (the commands' own logs of who ran).
lines_are() { [ -e "$1" ] && [ "$(wc -l <"$1")" -eq "$2" ]; }
# A commands' start/end log (lease_probe.py's, permit_probe.py's, once_per.bats's jobs'):
# starts_in LOG counts the commands' starts (0 before LOG exists), all_ended LOG holds once every
# start has its end (the observers log ends outside the commands' process groups, so they may
# come a moment after the command).
starts_in() { if [ -e "$1" ]; then grep -c '^start' "$1" || true; else echo 0; fi; }
all_ended() { [ "$(starts_in "$1")" = "$(grep -c '^end' "$1" || true)" ]; }
# blocked_clients [PORT]: how many clients the server on PORT (the test server's by default) holds
# in a blocking wait (BLPOP).
blocked_clients() {
    cli "${1:-$REDIS_PORT}" INFO clients | tr -d '\r' | sed -n 's/^blocked_clients://p'
}
blocked_is() { [ "$(blocked_clients "$REDIS_PORT")" = "$1" ]; }
# watchdog_of PID: the pid of the watchdog of the redlock-run PID, once it has one. It appears
# a moment after the command may have started: until its exec it is named redlock-run.
watchdog_of() { pgrep -P "$1" -x rl-watchdog; }
# pid_gone PID: PID has exited, even if it lingers as a zombie. A test's background job is
# reaped by its shell only when that shell gets round to it: a wait_for loop of builtins (kill -0,
# read -t) once saw an exited redlock-run answer kill -0 for the whole of its 10s (ciAN,
# cluster.bats 8: it had logged its release; its /proc entry was gone as soon as the failure
# report forked a cat). An orphan is reaped by init, which may take its time too.
pid_gone() {
    kill -0 "$1" 2>/dev/null || return 0
    local stat
    { IFS= read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 0
    stat=${stat##*) }
    [ "${stat%% *}" = Z ]
}

# rl_start ARGS...: starts redlock-run in the background with SIGINT and SIGQUIT at their default
# (a non-interactive shell's `&` would ignore them, and the command inherits that), its stdout
# and stderr in $RL_OUT and $RL_ERR; sets RL_PID.
rl_start() {
    RL_OUT="$BATS_TEST_TMPDIR/rl.out"
    RL_ERR="$BATS_TEST_TMPDIR/rl.err"
    # The dispositions the signal tests assert, whatever this shell inherited: a background job
    # of a non-interactive shell starts with SIGINT and SIGQUIT ignored, and a suite run under
    # nohup or by a runner that ignores SIGHUP or SIGTERM passes that on; an ignored signal stays
    # ignored across exec (redlock-run keeps nohup's promise), and a non-interactive bash cannot
    # undo it with trap.
    env --default-signal=HUP,INT,QUIT,TERM "$RL" "$@" >"$RL_OUT" 2>"$RL_ERR" &
    RL_PID=$!
}

# rl_finish SECONDS: waits up to SECONDS for the background redlock-run to exit and sets
# RL_STATUS; kills it and fails when it does not exit in time (wait_for has printed its stderr).
rl_finish() {
    if ! wait_for "$1" pid_gone "$RL_PID"; then
        # Where it stands, for a CI log: each thread's state and kernel wait, and its children
        # (ciAI: an ASan redlock-run "still ran" 15s after a forwarded SIGHUP, with nothing on
        # stderr; most likely the unreaped zombie that pid_gone now sees through).
        local t
        for t in /proc/"$RL_PID"/task/*; do
            echo "thread ${t##*/} $(cat "$t/comm" 2>/dev/null): state $(cut -d' ' -f3 "$t/stat" 2>/dev/null), wchan $(cat "$t/wchan" 2>/dev/null)"
        done >&2
        grep -E '^(SigPnd|ShdPnd|SigBlk|SigIgn)' "/proc/$RL_PID/status" >&2 2>/dev/null || true
        ps -o pid,stat,etime,args --ppid "$RL_PID" >&2 2>/dev/null || true
        kill -9 "$RL_PID" 2>/dev/null || true
        wait "$RL_PID" 2>/dev/null || true
        return 1
    fi
    RL_STATUS=0
    wait "$RL_PID" || RL_STATUS=$?
    RL_PID=
}

# Kills a redlock-run left running by a failed test, and any process group recorded in the
# files given (pids written by commands that started their own group).
rl_cleanup() {
    if [ -n "${RL_PID:-}" ]; then
        kill -9 "$RL_PID" 2>/dev/null || true
        wait "$RL_PID" 2>/dev/null || true
        RL_PID=
    fi
    local f
    for f in "$@"; do
        [ -s "$f" ] && kill -9 -- "-$(cat "$f")" 2>/dev/null || true
    done
}

# Milliseconds since the epoch, for asserting that something happened before a deadline.
now_ms() {
    local t=${EPOCHREALTIME/[.,]/}
    echo $((t / 1000))
}

file_contains() { grep -q -- "$2" "$1" 2>/dev/null; }

# AWAIT: shell code, for bash -c, that returns 0 once the file "$g" exists (set g first). It polls
# every 20ms without starting a process per poll (bash's read, timing out on a pipe that nobody
# writes): a `sleep 0.02` per poll cost this VM about 4ms of CPU, and the holders' gates below
# polled thousands of times a pass on a suite that is CPU-bound.
AWAIT='exec {f}<> <(:); until [ -e "$g" ]; do read -r -t 0.02 -u "$f" _ || :; done'

# hold_until NAME GATE [OPTIONS...]: starts a redlock-run holding lock NAME (with OPTIONS) until
# the file GATE exists; returns once it holds the lock. HOLDER is redlock-run's pid.
hold_until() {
    local name=$1 gate=$2
    shift 2
    "$RL" "$@" "$name" -- bash -c "g=\$0; $AWAIT" "$gate" &
    HOLDER=$!
    wait_for 5 key_exists "$name"
}

# hold NAME [OPTIONS...]: a redlock-run that holds lock NAME, with its holder info recorded, until
# the test ends (teardown creates the stop file). Sets HOLDER_PID, the pid recorded as holder.
hold() {
    local name=$1
    shift
    rm -f "$BATS_TEST_TMPDIR/started"
    "$RL" --hold-info "$@" "$name" -- bash -c \
        'touch "$0/started"; g=$0/stop; '"$AWAIT" "$BATS_TEST_TMPDIR" \
        >/dev/null 2>&1 3>&- &
    HOLDER_PID=$!
    wait_for 5 file_exists "$BATS_TEST_TMPDIR/started"
}

# Ends the holder started by hold, if any.
stop_holder() {
    if [ -n "${HOLDER_PID:-}" ]; then
        touch "$BATS_TEST_TMPDIR/stop"
        wait "$HOLDER_PID" 2>/dev/null || true
    fi
}

# Replication set-ups for the Sentinel and --min-replicas tests: extra redis-servers (masters,
# replicas) and redis-sentinels on free loopback ports, each in its own temp dir, all stopped by
# nodes_stop_all. Load after helpers.bash.
# shellcheck shell=bash

NODE_PIDS=()
MASTER_NAME=mymaster

# node_start VAR [ARGS...]: a redis-server with ARGS on a free port; sets ${VAR}_PORT and
# ${VAR}_PID. A replica's first sync starts at once: the default waits 5s for more replicas
# (repl-diskless-sync-delay), which every test's set-up would pay.
node_start() {
    local var=$1 dir
    shift
    dir=$(mktemp -d "$BATS_TEST_TMPDIR/$var.XXXXXX")
    launch "$dir" redis_spawn --repl-diskless-sync-delay 0 "$@" || return 1
    printf -v "${var}_PORT" %s "$LAUNCH_PORT"
    printf -v "${var}_PID" %s "$LAUNCH_PID"
    NODE_PIDS+=("$LAUNCH_PID")
}

# node_stop PID: a clean stop of a node started here (SIGCONT first, in case it was stopped).
node_stop() {
    kill -CONT "$1" 2>/dev/null || true
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}

nodes_stop_all() {
    local pid
    for pid in "${NODE_PIDS[@]}"; do node_stop "$pid"; done
    NODE_PIDS=()
}

# replicas_online PORT N: the master on PORT has N replicas whose initial sync is done.
replicas_online() {
    [ "$(cli "$1" INFO replication | grep -c 'slave[0-9]*:.*state=online')" -ge "$2" ]
}

# master_with_replica: MASTER_PORT/_PID and REPLICA_PORT/_PID, replication running.
master_with_replica() {
    node_start MASTER
    node_start REPLICA --replicaof 127.0.0.1 "$MASTER_PORT"
    wait_for 10 replicas_online "$MASTER_PORT" 1
}

# sentinel_start VAR MASTER_PORT [CONFIG_LINE...]: a redis-sentinel that monitors MASTER_NAME at
# MASTER_PORT (quorum 2) with short down-after and failover timeouts; sets ${VAR}_PORT, ${VAR}_PID.
sentinel_start() {
    local var=$1 master_port=$2 dir
    shift 2
    dir=$(mktemp -d "$BATS_TEST_TMPDIR/$var.XXXXXX")
    launch "$dir" sentinel_spawn "$master_port" "$@" || return 1
    wait_for 5 sentinel_knows "$LAUNCH_PORT" || { echo "redis-sentinel $var knows no master" >&2; return 1; }
    printf -v "${var}_PORT" %s "$LAUNCH_PORT"
    printf -v "${var}_PID" %s "$LAUNCH_PID"
    NODE_PIDS+=("$LAUNCH_PID")
}

# sentinel_spawn PORT DIR MASTER_PORT [CONFIG_LINE...]: launch's spawner for a sentinel.
sentinel_spawn() {
    local port=$1 dir=$2 master_port=$3 line
    shift 3
    {
        echo "port $port"
        echo "bind 127.0.0.1"
        echo "daemonize no"
        echo "dir $dir"
        echo "logfile $dir/redis.log"
        echo "sentinel monitor $MASTER_NAME 127.0.0.1 $master_port 2"
        echo "sentinel down-after-milliseconds $MASTER_NAME 1000"
        echo "sentinel failover-timeout $MASTER_NAME 3000"
        for line in "$@"; do echo "$line"; done
    } >"$dir/sentinel.conf"
    redis-sentinel "$dir/sentinel.conf" >/dev/null 2>&1 3>&- &
}

sentinel_knows() { cli "$1" ${SENTINEL_AUTH:+-a "$SENTINEL_AUTH" --no-auth-warning} SENTINEL get-master-addr-by-name "$MASTER_NAME" 2>/dev/null | grep -q .; }

# sentinel_master_port PORT: the master's port according to the sentinel on PORT.
sentinel_master_port() { cli "$1" SENTINEL get-master-addr-by-name "$MASTER_NAME" | sed -n 2p; }

# sentinel_sees_replica PORT: the sentinel on PORT knows a replica with a working link, so a
# SENTINEL FAILOVER can promote it.
sentinel_sees_replica() {
    local out
    out=$(cli "$1" SENTINEL replicas "$MASTER_NAME" 2>/dev/null)
    grep -qx 'slave' <<<"$out" && grep -qx 'ok' <<<"$out"
}

# sentinels_know_each_other PORT: the sentinel on PORT has found the two others (needed before
# they can agree that a master is down).
sentinels_know_each_other() {
    [ "$(cli "$1" SENTINEL master "$MASTER_NAME" | grep -A1 -x num-other-sentinels | tail -1)" -ge 2 ]
}

# sentinel_points_to SENTINEL_PORT PORT: that sentinel names the node on PORT as master.
sentinel_points_to() { [ "$(sentinel_master_port "$1")" = "$2" ]; }

# role_is PORT ROLE: the node on PORT reports ROLE (master / slave).
role_is() { [ "$(cli "$1" ROLE | head -1)" = "$2" ]; }

# sentinel_setup: one master, one replica, three sentinels; SENTINEL_URL lists them all.
sentinel_setup() {
    master_with_replica
    sentinel_start S1 "$MASTER_PORT"
    sentinel_start S2 "$MASTER_PORT"
    sentinel_start S3 "$MASTER_PORT"
    SENTINEL_URL="redis-sentinel://127.0.0.1:$S1_PORT,127.0.0.1:$S2_PORT,127.0.0.1:$S3_PORT/$MASTER_NAME"
}

# True once a renewal reached node $1: its PTTL for key $2 rose between two consecutive samples.
# Comparing with one early sample instead races: read right after a renewal, it is the full TTL,
# which only a read within a millisecond or two of a later renewal could ever exceed.
pttl_rises() {
    local now last_file="$BATS_TEST_TMPDIR/pttl.$1.$2"
    now=$(cli "$1" PTTL "$2")
    local last
    last=$(cat "$last_file" 2>/dev/null || echo 999999999)
    echo "$now" >"$last_file"
    [ "$now" -gt "$last" ]
}

# replica_has KEY VALUE: the replica has received KEY with VALUE (replication is asynchronous).
replica_has() { [ "$(cli "$REPLICA_PORT" GET "$1")" = "$2" ]; }

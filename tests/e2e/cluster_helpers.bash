# Shared set-up for the Redis Cluster tests: three masters (and optionally a replica each) on free
# loopback ports, each in its own temporary directory, joined with `redis-cli --cluster create`.
# shellcheck shell=bash

load helpers

# cluster_start [NODES [REPLICAS [NODE_TIMEOUT_MS]]]: starts NODES nodes (3) and creates the
# cluster with REPLICAS replicas per master (0); exports CLUSTER_PORTS and CLUSTER_PIDS
# (space-separated, node order), CLUSTER_DIR and CLUSTER_URL (every node a seed).
cluster_start() {
    local count=${1:-3} replicas=${2:-0} node_timeout=${3:-5000}
    CLUSTER_DIR=$(mktemp -d "${BATS_FILE_TMPDIR:-/tmp}/cluster.XXXXXX")
    CLUSTER_PORTS=
    CLUSTER_PIDS=
    local i port dir
    for i in $(seq 1 "$count"); do
        dir="$CLUSTER_DIR/node$i"
        mkdir -p "$dir"
        launch "$dir" node_exec "$node_timeout" || { echo "node $i did not start" >&2; return 1; }
        disown "$LAUNCH_PID" # no job notice when a test kills a node; stopped by pid in cluster_stop
        CLUSTER_PIDS="$CLUSTER_PIDS $LAUNCH_PID"
        CLUSTER_PORTS="$CLUSTER_PORTS $LAUNCH_PORT"
    done
    CLUSTER_PORTS=${CLUSTER_PORTS# }
    CLUSTER_PIDS=${CLUSTER_PIDS# }
    export CLUSTER_DIR CLUSTER_PORTS CLUSTER_PIDS
    local nodes=()
    for port in $CLUSTER_PORTS; do nodes+=("127.0.0.1:$port"); done
    redis-cli --cluster create "${nodes[@]}" --cluster-replicas "$replicas" --cluster-yes \
        >"$CLUSTER_DIR/create.log" 2>&1 || { cat "$CLUSTER_DIR/create.log" >&2; return 1; }
    wait_for 20 cluster_settled || { echo "the cluster did not reach cluster_state:ok" >&2; return 1; }
    CLUSTER_URL="redis-cluster://$(IFS=,; echo "${nodes[*]}")"
    export CLUSTER_URL
}

# node_exec PORT DIR NODE_TIMEOUT_MS: launch's spawner for one cluster-enabled redis-server.
# The bus port is set explicitly: port + 10000 may be taken, or above 65535. A replica's first
# sync starts at once, not after the default 5s wait for more replicas.
node_exec() {
    redis_spawn "$1" "$2" --cluster-port "$(free_port)" --cluster-enabled yes \
        --cluster-config-file "$2/nodes.conf" --cluster-node-timeout "$3" \
        --repl-diskless-sync-delay 0
}

# Stops every node by its recorded pid.
cluster_stop() {
    local pid
    for pid in ${CLUSTER_PIDS:-}; do
        kill -CONT "$pid" 2>/dev/null || true
        kill -TERM "$pid" 2>/dev/null || true
    done
    for pid in ${CLUSTER_PIDS:-}; do
        wait_for 10 pid_gone "$pid" || kill -9 "$pid" 2>/dev/null || true
    done
}

node_answers() { [ "$(cli "$1" PING 2>/dev/null)" = PONG ]; }

# True when every node reports cluster_state:ok and all agree on who owns every slot.
cluster_settled() {
    local port first= map
    for port in $CLUSTER_PORTS; do
        cli "$port" CLUSTER INFO 2>/dev/null | grep -q '^cluster_state:ok' || return 1
        map=$(cli "$port" CLUSTER SLOTS 2>/dev/null | tr '\n' ' ')
        [ -n "$map" ] || return 1
        [ -z "$first" ] && first=$map
        [ "$map" = "$first" ] || return 1
    done
}

# The first node of the list that answers (a test may have killed some).
live_port() {
    local port
    for port in $CLUSTER_PORTS; do
        node_answers "$port" && { echo "$port"; return 0; }
    done
    return 1
}

# slot_owner_port SLOT [NODE]: the port of the master that owns SLOT, as the node on port NODE
# (by default the first live node of the list) sees it.
slot_owner_port() {
    local slot=$1 port=${2:-}
    [ -n "$port" ] || port=$(live_port)
    cli "$port" CLUSTER SLOTS | /usr/bin/python3 -c '
import sys
lines = sys.stdin.read().split("\n")
slot = int(sys.argv[1])
# redis-cli prints each CLUSTER SLOTS entry as: first, last, host, port, id[, replica...]
i = 0
while i + 3 < len(lines):
    first, last, host, port = lines[i:i + 4]
    if first.isdigit() and last.isdigit() and int(first) <= slot <= int(last):
        print(port)
        break
    i += 1
' "$slot"
}

# Node id of the node on PORT.
node_id() { cli "$1" CLUSTER MYID; }

# A port of the cluster that is not PORT (and not EXCEPT, if given).
other_port() {
    local port
    for port in $CLUSTER_PORTS; do
        [ "$port" != "$1" ] && [ "$port" != "${2:-}" ] && { echo "$port"; return; }
    done
}

# cluster_keyslot KEY: the slot Redis computes for KEY.
cluster_keyslot() { cli "$(live_port)" CLUSTER KEYSLOT "$1"; }

# owner_everywhere SLOT PORT: every live node names the master on PORT as SLOT's owner.
owner_everywhere() {
    local node
    for node in $CLUSTER_PORTS; do
        node_answers "$node" || continue
        [ "$(slot_owner_port "$1" "$node")" = "$2" ] || return 1
    done
}

# Deletes every key on every master.
cluster_flush() {
    local port
    for port in $CLUSTER_PORTS; do
        [ "$(cli "$port" ROLE | head -n 1)" = master ] && cli "$port" FLUSHALL >/dev/null
    done
    return 0
}

# ckey_exists KEY / ckey_absent KEY: asks the master that owns KEY's slot.
ckey_exists() { [ "$(cli "$(slot_owner_port "$(cluster_keyslot "$1")")" EXISTS "$1")" = 1 ]; }
ckey_absent() { [ "$(cli "$(slot_owner_port "$(cluster_keyslot "$1")")" EXISTS "$1")" = 0 ]; }

# slot_begin_migration SLOT FROM TO: marks SLOT importing on TO and migrating on FROM (ports):
# the first step of a slot move, when keys already moved answer with ASK.
slot_begin_migration() {
    local slot=$1 from=$2 to=$3
    cli "$to" CLUSTER SETSLOT "$slot" IMPORTING "$(node_id "$from")" >/dev/null
    cli "$from" CLUSTER SETSLOT "$slot" MIGRATING "$(node_id "$to")" >/dev/null
}

# slot_migrate_keys SLOT FROM TO: moves every key of SLOT from FROM to TO with MIGRATE.
slot_migrate_keys() {
    local slot=$1 from=$2 to=$3 keys
    mapfile -t keys < <(cli "$from" CLUSTER GETKEYSINSLOT "$slot" 1000)
    [ ${#keys[@]} -eq 0 ] && return 0
    cli "$from" MIGRATE 127.0.0.1 "$to" "" 0 5000 KEYS "${keys[@]}" >/dev/null
}

# slot_finish_migration SLOT TO: assigns SLOT to TO on every node, ending the move.
slot_finish_migration() {
    local slot=$1 to=$2 id port
    id=$(node_id "$to")
    # The new owner first, as redis-cli --cluster does, so no node points at a non-owner.
    cli "$to" CLUSTER SETSLOT "$slot" NODE "$id" >/dev/null
    for port in $CLUSTER_PORTS; do
        [ "$port" = "$to" ] || cli "$port" CLUSTER SETSLOT "$slot" NODE "$id" >/dev/null
    done
}

# move_slot SLOT FROM TO: the whole move in one go.
move_slot() {
    slot_begin_migration "$1" "$2" "$3"
    slot_migrate_keys "$1" "$2" "$3"
    slot_finish_migration "$1" "$3"
}

# name_on_port PORT [STEM]: a lock name (STEM1, STEM2, ...) whose slot the master on PORT owns.
name_on_port() {
    local port=$1 stem=${2:-lock} i
    for i in $(seq 1 200); do
        if [ "$(slot_owner_port "$(cluster_keyslot "$stem$i")")" = "$port" ]; then
            echo "$stem$i"
            return 0
        fi
    done
    return 1
}

# askcli PORT ARGS...: one command sent after ASKING on the same connection, to read a key on
# the node importing its slot.
askcli() {
    local port=$1
    shift
    printf 'ASKING\n%s\n' "$*" | cli "$port" | tail -n 1
}

# cluster_hold NAME GATE [OPTIONS...]: a redlock-run holding NAME until GATE exists, its stderr in
# $BATS_TEST_TMPDIR/NAME.err; returns once the key exists. Appends the pid to HOLDERS.
cluster_hold() {
    local name=$1 gate=$2
    shift 2
    "$RL" "$@" "$name" -- bash -c "g=\$0; $AWAIT" "$gate" \
        2>"$BATS_TEST_TMPDIR/$name.err" 3>&- &
    HOLDERS="${HOLDERS:-} $!"
    wait_for 10 ckey_exists "$name"
}

# Ends every holder started by cluster_hold (their gates must exist by now) or kills it.
cluster_holders_stop() {
    local pid
    for pid in ${HOLDERS:-}; do
        wait_for 10 pid_gone "$pid" || kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    HOLDERS=
}

# count_lines FILE PATTERN: how many lines of FILE contain PATTERN.
count_lines() { grep -c -- "$2" "$1" 2>/dev/null || true; }

# lines_after FILE MARK PATTERN: how many lines containing PATTERN follow the first line
# containing MARK.
lines_after() {
    awk -v mark="$2" -v pat="$3" 'seen && index($0, pat) { n++ } index($0, mark) { seen = 1 }
        END { print n + 0 }' "$1"
}

# dbsize_at_least PORT N: the node on PORT holds at least N keys.
dbsize_at_least() { [ "$(cli "$1" DBSIZE)" -ge "$2" ]; }

# at_least_after FILE MARK PATTERN N: at least N lines containing PATTERN follow the first line
# containing MARK (for wait_for, which re-evaluates it on every poll).
at_least_after() { [ "$(lines_after "$1" "$2" "$3")" -ge "$4" ]; }

# A test that moves a slot records "SLOT FROM TO" in MOVING; this completes the move, so that a
# failed test leaves no half-migrated slot to the next.
finish_moving() {
    [ -n "${MOVING:-}" ] || return 0
    set -- $MOVING
    slot_migrate_keys "$1" "$2" "$3" || true
    slot_finish_migration "$1" "$3" || true
    MOVING=
    wait_for 10 cluster_settled || true
}

# A test that breaks a slot's ownership records "SLOT OWNER" in RESTORE; this gives the slot back
# to OWNER on every node.
restore_slot() {
    [ -n "${RESTORE:-}" ] || return 0
    set -- $RESTORE
    slot_finish_migration "$1" "$2" || true
    RESTORE=
    wait_for 10 cluster_settled || true
}

# The pid of the node on PORT.
node_pid() {
    local ports=($CLUSTER_PORTS) pids=($CLUSTER_PIDS) i
    for i in "${!ports[@]}"; do [ "${ports[$i]}" = "$1" ] && echo "${pids[$i]}"; done
}

# The port of the first replica of the master on PORT, from the cluster's node table (replicas
# are listed there before their replication link is up).
replica_port() {
    cli "$1" CLUSTER NODES | awk -v id="$(node_id "$1")" \
        '$3 ~ /slave/ && $4 == id { split($2, a, "[:@]"); print a[2]; exit }'
}

# replica_linked PORT: the replica on PORT has its replication link up.
replica_linked() { cli "$1" INFO replication 2>/dev/null | grep -q '^master_link_status:up'; }

# live_pair: a master with a replica whose link is up; sets PAIR_MASTER and
# PAIR_REPLICA (ports). Tests that kill or cut nodes leave such pairs to the later ones.
live_pair() {
    local port replica
    for port in $CLUSTER_PORTS; do
        is_master "$port" || continue
        replica=$(replica_port "$port")
        [ -n "$replica" ] && replica_linked "$replica" || continue
        PAIR_MASTER=$port
        PAIR_REPLICA=$replica
        return 0
    done
    return 1
}

# replica_get PORT KEY: KEY's value as the replica on PORT has it.
replica_get() { printf 'READONLY\nGET %s\n' "$2" | cli "$1" | tail -n 1; }

is_master() { [ "$(cli "$1" ROLE 2>/dev/null | head -n 1)" = master ]; }

# replica_has KEY PORT: the replica on PORT has KEY (READONLY lets a replica answer for its slots).
replica_has() { [ "$(printf 'READONLY\nEXISTS %s\n' "$1" | cli "$2" | tail -n 1)" = 1 ]; }

# A test that set requirepass on the masters sets AUTH_SET; this removes the password again.
clear_passwords() {
    [ -n "${AUTH_SET:-}" ] || return 0
    local port
    for port in $CLUSTER_PORTS; do
        REDISCLI_AUTH=pw cli "$port" CONFIG SET requirepass '' >/dev/null
    done
    AUTH_SET=
}

# keys_only_in_slot SLOT OWNER: every key on every master is on OWNER (a port), in SLOT: a lock's
# keys, all of them, where the lock key is.
keys_only_in_slot() {
    local port key
    for port in $CLUSTER_PORTS; do
        while IFS= read -r key; do
            [ -n "$key" ] || continue
            assert_equal "$port" "$2"
            assert_equal "$(cluster_keyslot "$key")" "$1"
        done < <(cli "$port" --scan)
    done
}

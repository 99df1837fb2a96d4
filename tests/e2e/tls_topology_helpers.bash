# TLS for every topology: Sentinel and Cluster set-ups whose nodes and sentinels also listen on a
# TLS port, replicate and gossip over TLS, and require client certificates, as managed services
# do. Each node keeps a plain port too, so that the tests can look at keys and drive failovers
# with plain redis-cli. Load after helpers.bash, tls_helpers.bash, sentinel_helpers.bash.
# shellcheck shell=bash

# tls_make_node_cert DIR: DIR/node.crt, .key for 127.0.0.1 and localhost, usable as server and as
# client certificate (sentinels and replicas present it to each other), signed by DIR/ca.crt.
tls_make_node_cert() {
    (
        set -e
        cd "$1"
        printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' >node.ext
        tls_sign node ca localhost
    ) >>"$1/openssl.log" 2>&1 || { cat "$1/openssl.log" >&2; return 1; }
}

# The TLS settings every node and sentinel gets.
tls_node_args() {
    TLS_NODE_ARGS=(--tls-cert-file "$PKI/node.crt" --tls-key-file "$PKI/node.key"
        --tls-ca-cert-file "$PKI/ca.crt" --tls-auth-clients yes --tls-replication yes)
}

# The client options of a redlock-run that speaks TLS to these nodes.
TLS_CLIENT=()
tls_client_opts() { TLS_CLIENT=(--cacert "$PKI/ca.crt" --cert "$PKI/client.crt" --key "$PKI/client.key"); }

# tls_sentinel_start VAR MASTER_TLS_PORT [CONFIG_LINE...]: a redis-sentinel with a plain port and a
# TLS port ${VAR}_TLS that monitors MASTER_NAME at MASTER_TLS_PORT over TLS. Waits through the
# plain port unless TLS_SENTINEL_WAIT names another check (given the plain port).
# These tests fail over only by SENTINEL FAILOVER, which does not wait for a master to be down:
# a 60s down-after keeps a master that a loaded machine left unanswered for a second (the
# default set-up's 1000ms) from being failed over behind a test's back (ciQ: the lock was then
# taken on the promoted replica, and the test found no key on the master it expected).
tls_sentinel_start() {
    local var=$1 master_port=$2
    shift 2
    sentinel_start "$var" "$master_port" "sentinel down-after-milliseconds $MASTER_NAME 60000" \
        "tls-port @PORT2@" "tls-cert-file $PKI/node.crt" \
        "tls-key-file $PKI/node.key" "tls-ca-cert-file $PKI/ca.crt" "tls-auth-clients yes" \
        "tls-replication yes" "$@" || return 1
    printf -v "${var}_TLS" %s "$LAUNCH_PORT2"
}

# tls_sentinel_setup: a master and a replica replicating over TLS, three TLS sentinels;
# TLS_SENTINEL_URL is the rediss-sentinel:// URL of their TLS ports. MASTER_TLS / REPLICA_TLS
# are the nodes' TLS ports (what the sentinels name), MASTER_PORT / REPLICA_PORT the plain ones.
tls_sentinel_setup() {
    tls_node_args
    tls_client_opts
    node_start MASTER --tls-port @PORT2@ "${TLS_NODE_ARGS[@]}" || return 1
    MASTER_TLS=$LAUNCH_PORT2
    node_start REPLICA --tls-port @PORT2@ "${TLS_NODE_ARGS[@]}" \
        --replicaof 127.0.0.1 "$MASTER_TLS" || return 1
    REPLICA_TLS=$LAUNCH_PORT2
    wait_for 10 replicas_online "$MASTER_PORT" 1
    tls_sentinel_start S1 "$MASTER_TLS"
    tls_sentinel_start S2 "$MASTER_TLS"
    tls_sentinel_start S3 "$MASTER_TLS"
    TLS_SENTINEL_URL="rediss-sentinel://127.0.0.1:$S1_TLS,127.0.0.1:$S2_TLS,127.0.0.1:$S3_TLS/$MASTER_NAME"
}

# Cluster nodes with a TLS port and TLS on the cluster bus; replaces cluster_helpers' node_exec
# (same arguments). Each node's TLS port is written to DIR/tls.port.
tls_cluster_node_exec() {
    local tls_port
    tls_port=$(free_port)
    echo "$tls_port" >"$2/tls.port"
    redis_spawn "$1" "$2" --cluster-port "$(free_port)" --cluster-enabled yes \
        --cluster-config-file "$2/nodes.conf" --cluster-node-timeout "$3" \
        --tls-port "$tls_port" --tls-cluster yes "${TLS_NODE_ARGS[@]}"
}

# tls_cluster_start: three TLS cluster masters; TLS_CLUSTER_URL lists their TLS ports.
tls_cluster_start() {
    tls_node_args
    tls_client_opts
    node_exec() { tls_cluster_node_exec "$@"; }
    cluster_start 3 0
    local dir seeds=()
    for dir in "$CLUSTER_DIR"/node*; do seeds+=("127.0.0.1:$(cat "$dir/tls.port")"); done
    TLS_CLUSTER_URL="rediss-cluster://$(IFS=,; echo "${seeds[*]}")"
}

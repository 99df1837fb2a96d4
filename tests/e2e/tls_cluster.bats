#!/usr/bin/env bats
# rediss-cluster://: a Redis Cluster whose nodes speak only TLS to clients that matter here (and
# on the cluster bus), with client certificates, as ElastiCache with in-transit encryption and
# cluster mode, Memorystore for Redis Cluster or Redis Cloud's OSS Cluster API require.
load helpers
load tls_helpers
load cluster_helpers
load tls_topology_helpers
bats_require_minimum_version 1.5.0

setup_file() {
    export PKI="$BATS_FILE_TMPDIR/pki"
    tls_make_pki "$PKI"
    tls_make_node_cert "$PKI"
    tls_cluster_start
    export TLS_CLUSTER_URL
}
teardown_file() { cluster_stop; }

setup() {
    tls_client_opts
    for port in $CLUSTER_PORTS; do cli "$port" FLUSHALL >/dev/null; done
}

teardown() {
    touch "$BATS_TEST_TMPDIR/stop"
    rl_cleanup
}

@test "a run over rediss-cluster:// reaches every slot's master over TLS" {
    local name
    # Three names: with three masters, some lie on a node that is not the first seed.
    for name in alpha beta gamma delta; do
        run "$RL" -u "$TLS_CLUSTER_URL" "${TLS_CLIENT[@]}" "$name" -- \
            sh -c 'redis-cli -c -p "${CLUSTER_PORTS%% *}" GET "$REDLOCK_KEY"'
        assert_success
        assert_output --regexp '^[0-9a-f]{32}$'
    done
}

@test "a held lock over rediss-cluster:// makes a second run exit 75; status and list see it" {
    rl_start -u "$TLS_CLUSTER_URL" "${TLS_CLIENT[@]}" held -- sh -c \
        'touch "$0/started"; while [ ! -e "$0/stop" ]; do sleep 0.05; done' "$BATS_TEST_TMPDIR"
    wait_for 5 file_exists "$BATS_TEST_TMPDIR/started"
    run "$RL" -u "$TLS_CLUSTER_URL" "${TLS_CLIENT[@]}" held -- touch "$BATS_TEST_TMPDIR/ran"
    assert_failure 75
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    run "$RL" -u "$TLS_CLUSTER_URL" "${TLS_CLIENT[@]}" status held --json
    assert_success
    [ "$(jq -r .held <<<"$output")" = true ]
    run "$RL" -u "$TLS_CLUSTER_URL" "${TLS_CLIENT[@]}" list
    assert_success
    assert_line --regexp '^held '
    touch "$BATS_TEST_TMPDIR/stop"
    rl_finish 10
    [ "$RL_STATUS" = 0 ]
}

@test "rediss-cluster:// without the client certificate, or with an unknown CA, exits 78" {
    run -78 "$RL" -u "$TLS_CLUSTER_URL" --cacert "$PKI/other-ca.crt" job -- true
    assert_output --partial "TLS handshake with Redis at"
    run "$RL" -u "$TLS_CLUSTER_URL" --cacert "$PKI/ca.crt" job -- touch "$BATS_TEST_TMPDIR/ran"
    assert_failure
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "TLS options with a plain redis-cluster:// URL are a usage error" {
    run -64 "$RL" -u "redis-cluster://127.0.0.1:${CLUSTER_PORTS%% *}" --cacert "$PKI/ca.crt" job -- true
    assert_output --partial "--cacert is for TLS"
}

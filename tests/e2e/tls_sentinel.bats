#!/usr/bin/env bats
# rediss-sentinel://: sentinels and master over TLS with client certificates, as managed Redis
# with Sentinel requires: the master is found through TLS sentinels, followed across a SENTINEL
# FAILOVER, and the sentinels' own ACL user and password are sent over TLS.
load helpers
load tls_helpers
load sentinel_helpers
load tls_topology_helpers
bats_require_minimum_version 1.5.0

setup_file() {
    export PKI="$BATS_FILE_TMPDIR/pki"
    tls_make_pki "$PKI"
    tls_make_node_cert "$PKI"
}

setup() {
    # Ten seconds for a run's connect (asking up to three sentinels over TLS, then the master)
    # and for each command, in place of 2s: an ASan pass on a loaded machine once saw a status
    # run's three sentinels all time out within the 2s, and once an EVALSHA take 1.27s of it.
    # Options given on the command line still win; these tests are about TLS, not timeouts.
    export REDLOCK_CONNECT_TIMEOUT=10s REDLOCK_COMMAND_TIMEOUT=10s
    tls_sentinel_setup
    LONG_JOB=(sh -c 'touch "$0/started"; while [ ! -e "$0/stop" ]; do sleep 0.05; done' "$BATS_TEST_TMPDIR")
}

teardown() {
    rl_cleanup
    nodes_stop_all
}

# Prints the lock's value on the master, read through its plain port.
show_key() { echo "redis-cli -p $MASTER_PORT ${1:+-n $1} GET \"\$REDLOCK_KEY\""; }

@test "a run over rediss-sentinel:// finds the master through TLS sentinels and holds the lock there" {
    run "$RL" -v -u "$TLS_SENTINEL_URL" "${TLS_CLIENT[@]}" job -- sh -c "$(show_key)"
    assert_success
    assert_line --regexp '^[0-9a-f]{32}$'
    assert_output --partial "says master '$MASTER_NAME' is at 127.0.0.1:$MASTER_TLS"
    [ "$(cli "$MASTER_PORT" EXISTS job)" = 0 ]
    # Lettuce's form, the master named in the fragment, with a database.
    run "$RL" -u "rediss-sentinel://127.0.0.1:$S2_TLS/2#$MASTER_NAME" "${TLS_CLIENT[@]}" job -- \
        sh -c "$(show_key 2)"
    assert_success
    assert_output --regexp '^[0-9a-f]{32}$'
}

@test "rediss-sentinel:// verifies the sentinels' certificates: an unknown CA exits 78 without running" {
    run -78 "$RL" -u "$TLS_SENTINEL_URL" --cacert "$PKI/other-ca.crt" --cert "$PKI/client.crt" \
        --key "$PKI/client.key" job -- touch "$BATS_TEST_TMPDIR/ran"
    assert_output --partial "TLS handshake with Redis at 127.0.0.1:$S1_TLS failed"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    # Plain redis-sentinel:// to the TLS ports does not get an answer it could trust.
    run "$RL" --connect-timeout 500ms -u "redis-sentinel://127.0.0.1:$S1_TLS/$MASTER_NAME" job -- true
    assert_failure 69
}

@test "status, list and release work through TLS sentinels" {
    run "$RL" -u "$TLS_SENTINEL_URL" "${TLS_CLIENT[@]}" job -- sh -c \
        "\"$RL\" -u \"$TLS_SENTINEL_URL\" ${TLS_CLIENT[*]} status job --json"
    assert_success
    [ "$(jq -r .held <<<"$output")" = true ]
    cli "$MASTER_PORT" SET stale x >/dev/null
    run "$RL" -u "$TLS_SENTINEL_URL" "${TLS_CLIENT[@]}" release --force stale
    assert_success
    [ "$(cli "$MASTER_PORT" EXISTS stale)" = 0 ]
}

@test "a SENTINEL FAILOVER under TLS keeps the lock: renewed and released on the new master" {
    # A 10s lease renewed every 500ms: with 3s (renewed every 1s), a TSan pass (ciT) saw the
    # promoted replica's copy of the key expire before the run, slowed by the load, renewed it
    # there; what this test is about is that renewals follow the failover, not how soon.
    rl_start -v -u "$TLS_SENTINEL_URL" "${TLS_CLIENT[@]}" -t 10s --renew-every 500ms job -- "${LONG_JOB[@]}"
    wait_for 5 file_exists "$BATS_TEST_TMPDIR/started"
    local token
    token=$(cli "$MASTER_PORT" GET job)
    # The replica has the key before it is promoted (replication is asynchronous).
    wait_for 10 replica_has job "$token"
    wait_for 20 sentinel_sees_replica "$S1_PORT"
    run cli "$S1_PORT" SENTINEL FAILOVER "$MASTER_NAME"
    assert_output OK
    wait_for 20 sentinel_points_to "$S1_PORT" "$REPLICA_TLS"
    run cli "$REPLICA_PORT" GET job
    assert_output "$token"
    wait_for 10 pttl_rises "$REPLICA_PORT" job || { cat "$RL_ERR" >&2; false; }
    assert file_contains "$RL_ERR" "moved from 127.0.0.1:$MASTER_TLS to 127.0.0.1:$REPLICA_TLS"
    touch "$BATS_TEST_TMPDIR/stop"
    rl_finish 10
    [ "$RL_STATUS" = 0 ]
    [ "$(cli "$REPLICA_PORT" EXISTS job)" = 0 ]
    run cat "$RL_ERR"
    refute_output --partial "lost"
}

sentinel_user_knows() {
    redis-cli -h 127.0.0.1 -p "$1" --user locker --pass sentinel-secret --no-auth-warning \
        SENTINEL get-master-addr-by-name "$MASTER_NAME" 2>/dev/null | grep -q .
}

@test "sentinels with an ACL user: --sentinel-user with --sentinel-password-file logs in over TLS" {
    # sentinel_start waits through the plain port without a user: let this one's default user in
    # only there for the wait, then take it away.
    tls_sentinel_start ACL "$MASTER_TLS" "user locker on >sentinel-secret allchannels +@all"
    wait_for 5 sentinel_user_knows "$ACL_PORT"
    redis-cli -h 127.0.0.1 -p "$ACL_PORT" ACL SETUSER default off >/dev/null
    local url="rediss-sentinel://127.0.0.1:$ACL_TLS/$MASTER_NAME"
    echo sentinel-secret >"$BATS_TEST_TMPDIR/sentinel.pass"
    run "$RL" -u "$url" "${TLS_CLIENT[@]}" --sentinel-user locker \
        --sentinel-password-file "$BATS_TEST_TMPDIR/sentinel.pass" job -- true
    assert_success
    REDLOCK_SENTINEL_USER=locker run "$RL" -u "$url" "${TLS_CLIENT[@]}" \
        --sentinel-password-file "$BATS_TEST_TMPDIR/sentinel.pass" job -- true
    assert_success
    # The password alone is tried as the default user's, which is off.
    run "$RL" -u "$url" "${TLS_CLIENT[@]}" \
        --sentinel-password-file "$BATS_TEST_TMPDIR/sentinel.pass" job -- touch "$BATS_TEST_TMPDIR/ran"
    assert_failure 77
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    run -64 "$RL" -u "$url" "${TLS_CLIENT[@]}" --sentinel-user locker job -- true
    assert_output --partial "--sentinel-user needs --sentinel-password-file"
}

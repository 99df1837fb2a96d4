#!/usr/bin/env bats
# Redis Cluster (redis-cluster://): routing by the lock key's slot, MOVED, ASK and TRYAGAIN during
# slot moves, seeds that are down, and the operator commands across masters, against a real
# three-master cluster on loopback.
load cluster_helpers
bats_require_minimum_version 1.5.0

setup_file() { cluster_start; }
teardown_file() { cluster_stop; }

setup() {
    cluster_flush
    export REDLOCK_URL="$CLUSTER_URL"
    GATE="$BATS_TEST_TMPDIR/gate"
}

teardown() {
    touch "$GATE"
    cluster_holders_stop
    rl_cleanup
    finish_moving
    restore_slot
    clear_passwords
    redis_stop
}

@test "the lock key and every companion key share one slot, and our slot is Redis's" {
    for name in job 'a}b' '{tag}x' 'jobs:{eu}:nightly' '}{' 'ünïcode' 'x{}y'; do
        rm -f "$GATE"
        cluster_hold "$name" "$GATE" --hold-info
        # A waiter adds the queue and its ':alive' mark.
        rl_start --wait 20s "$name" -- true
        slot=$(cluster_keyslot "$name")
        owner=$(slot_owner_port "$slot")
        wait_for 10 dbsize_at_least "$owner" 5
        # Every key of the lock is on the lock key's master, in the lock key's slot.
        keys_only_in_slot "$slot" "$owner"
        touch "$GATE"
        rl_finish 10
        assert_equal "$RL_STATUS" 0
        cluster_holders_stop
        # Our CRC16 routes the lock to the slot and master Redis computes, with no MOVED.
        run "$RL" -v --hold-info "$name" -- true
        assert_success
        assert_line "redlock-run: Redis Cluster: lock key '$name' is in slot $slot, served by 127.0.0.1:$owner"
        refute_output --partial MOVED
        cluster_flush
    done
}

shared_holders_are() { [ "$("$RL" status --json "$1" | jq -r '.holders | length')" = "$2" ]; }

@test "--shared on a cluster: two shared holders together, an exclusive waiter after them, every key in the lock's slot" {
    for name in 'jobs:{eu}:nightly' 'a}b'; do
        rm -f "$GATE"
        cluster_hold "$name" "$GATE" --shared --hold-info
        cluster_hold "$name" "$GATE" --shared --hold-info
        wait_for 10 shared_holders_are "$name" 2
        run "$RL" status --json "$name"
        assert_success
        assert_equal "$(jq -r '.holders | length' <<<"$output")" 2
        run "$RL" "$name" -- true
        assert_equal "$status" 75
        rl_start --wait 20s "$name" -- sh -c 'echo "$REDLOCK_FENCE" > "$0"' "$BATS_TEST_TMPDIR/x"
        slot=$(cluster_keyslot "$name")
        owner=$(slot_owner_port "$slot")
        # lock key, fence, holders set, 2 holder records, queue, waiter's mark
        wait_for 10 dbsize_at_least "$owner" 7
        keys_only_in_slot "$slot" "$owner"
        [ ! -e "$BATS_TEST_TMPDIR/x" ]
        touch "$GATE"
        rl_finish 10
        assert_equal "$RL_STATUS" 0
        grep -Eq '^[0-9]+$' "$BATS_TEST_TMPDIR/x"
        cluster_holders_stop
        ckey_absent "$name"
        rm -f "$BATS_TEST_TMPDIR/x"
        cluster_flush
    done
}

permits_held_are() { [ "$("$RL" status --json "$1" | jq -r '.held_permits')" = "$2" ]; }

@test "--permits on a cluster: two holders together, a third busy, every key in the lock's slot" {
    for name in 'jobs:{eu}:weekly' 'p}q'; do
        rm -f "$GATE"
        cluster_hold "$name" "$GATE" --permits 2 --hold-info
        cluster_hold "$name" "$GATE" --permits 2 --hold-info
        wait_for 10 permits_held_are "$name" 2
        run "$RL" --permits 2 "$name" -- true
        assert_equal "$status" 75
        assert_output --partial "all 2 permits of lock"
        slot=$(cluster_keyslot "$name")
        owner=$(slot_owner_port "$slot")
        # lock key (the record), fence, 2 permits and their holder info
        wait_for 10 dbsize_at_least "$owner" 6
        keys_only_in_slot "$slot" "$owner"
        touch "$GATE"
        cluster_holders_stop
        ckey_absent "$name"
        cluster_flush
    done
}

@test "a seed that does not own the lock's slot leads the run to the slot's master" {
    owner=$(slot_owner_port "$(cluster_keyslot job)")
    seed=$(other_port "$owner")
    run "$RL" -u "redis-cluster://127.0.0.1:$seed" job -- sh -c \
        'echo "$REDLOCK_FENCE"; redis-cli -p "$0" GET "$REDLOCK_KEY"; echo "$REDLOCK_TOKEN"' "$owner"
    assert_success
    assert_line --index 0 --regexp '^[0-9]+$'
    # The token was stored on the owner itself.
    assert_equal "${lines[1]}" "${lines[2]}"
    ckey_absent job
}

@test "a second run on a held cluster lock exits 75 without running its command" {
    cluster_hold job "$GATE" --hold-info
    run "$RL" job -- touch "$BATS_TEST_TMPDIR/ran"
    assert_equal "$status" 75
    assert_output --regexp "^redlock-run: lock 'job' is held by .* pid [0-9]+"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "a waiter in cluster mode is woken by the release, long before the holder's TTL" {
    cluster_hold job "$GATE" --ttl 60s
    rl_start -v --wait 30s job -- sh -c 'echo "$REDLOCK_FENCE" > "$0"' "$BATS_TEST_TMPDIR/waiter"
    wait_for 10 ckey_exists '{job}:wait'
    [ ! -e "$BATS_TEST_TMPDIR/waiter" ]
    touch "$GATE"
    # Well inside the 60s TTL: only the release's wake-up can have let it in.
    rl_finish 20
    assert_equal "$RL_STATUS" 0
    grep -Eq '^[0-9]+$' "$BATS_TEST_TMPDIR/waiter"
    file_contains "$RL_ERR" "waited"
}

@test "status, list and release work across all three masters" {
    names=()
    for port in $CLUSTER_PORTS; do
        name=$(name_on_port "$port" lock)
        names+=("$name")
        cluster_hold "$name" "$GATE" --hold-info
    done
    run "$RL" list
    assert_success
    for name in "${names[@]}"; do assert_line --regexp "^$name "; done
    run "$RL" list --json
    assert_success
    assert_equal "$(echo "$output" | jq length)" 3
    # The names, as the shell completions ask for them: from every master.
    run "$RL" list --names
    assert_success
    assert_output "$(printf '%s\n' "${names[@]}" | LC_ALL=C sort)"

    run "$RL" status "${names[0]}"
    assert_success
    assert_line --regexp '^state: +held$'
    run -1 "$RL" status free-lock
    assert_line --regexp '^state: +free$'

    run "$RL" release --force "${names[1]}"
    assert_success
    assert_output --partial "released lock '${names[1]}' held by"
    run -1 "$RL" status "${names[1]}"

    run -1 "$RL" release --token 00000000000000000000000000000000 "${names[2]}"
    ckey_exists "${names[2]}"
    owner=$(slot_owner_port "$(cluster_keyslot "${names[2]}")")
    token=$(cli "$owner" GET "${names[2]}")
    run "$RL" release --token "$token" "${names[2]}"
    assert_success
    ckey_absent "${names[2]}"

    run "$RL" list --json
    assert_equal "$(echo "$output" | jq -r '.[].name')" "${names[0]}"
}

@test "a slot migrating mid-run: renewals and status follow ASK, then MOVED, and release works" {
    slot=$(cluster_keyslot job)
    from=$(slot_owner_port "$slot")
    to=$(other_port "$from")
    MOVING="$slot $from $to"
    rl_start -v --hold-info --ttl 3s job -- bash -c \
        'g=$0; '"$AWAIT" "$GATE"
    wait_for 10 ckey_exists job
    slot_begin_migration "$slot" "$from" "$to"
    slot_migrate_keys "$slot" "$from" "$to"
    assert_equal "$(askcli "$to" EXISTS job)" 1
    # The source answers ASK for the moved keys; the renewals keep the lock alive through it
    # for longer than its TTL.
    wait_for 10 file_contains "$RL_ERR" "(ASK)"
    wait_for 15 at_least_after "$RL_ERR" "(ASK)" "renewed lock" 4
    assert_equal "$(askcli "$to" EXISTS job)" 1
    run "$RL" -v status job
    assert_success
    assert_line --regexp '^state: +held$'
    assert_output --partial "(ASK)"

    slot_finish_migration "$slot" "$to"
    wait_for 10 file_contains "$RL_ERR" "(MOVED)"
    wait_for 10 at_least_after "$RL_ERR" "(MOVED)" "renewed lock" 1
    touch "$GATE"
    rl_finish 10
    assert_equal "$RL_STATUS" 0
    refute grep -Eq "lock 'job' lost|gone at release|taken over" "$RL_ERR"
    file_contains "$RL_ERR" "released lock 'job'"
    assert_equal "$(cli "$to" EXISTS job)" 0
}

@test "keys split by a migration draw TRYAGAIN, retried until the move ends; the lock survives" {
    slot=$(cluster_keyslot job)
    from=$(slot_owner_port "$slot")
    to=$(other_port "$from")
    MOVING="$slot $from $to"
    # A long lease renewed often: the renewals meet the migration at once, and their retries
    # outlast however long the move takes on a loaded machine (a 6 s TTL left only ~3 s).
    rl_start -v --ttl 30s --renew-every 500ms job -- bash -c \
        'g=$0; '"$AWAIT" "$GATE"
    wait_for 10 ckey_exists job
    # Without its holder info (recorded by default; deleted here) the renewal names an absent
    # key, so the source sends it to the target (ASK), which lacks the lock key until MIGRATE:
    # TRYAGAIN.
    cli "$from" DEL '{job}:info' >/dev/null
    slot_begin_migration "$slot" "$from" "$to"
    wait_for 10 file_contains "$RL_ERR" "TRYAGAIN"
    slot_migrate_keys "$slot" "$from" "$to"
    slot_finish_migration "$slot" "$to"
    wait_for 25 at_least_after "$RL_ERR" "TRYAGAIN" "renewed lock" 1
    touch "$GATE"
    rl_finish 10
    assert_equal "$RL_STATUS" 0
    refute grep -Eq "lock 'job' lost|gone at release|taken over" "$RL_ERR"
    assert_equal "$(cli "$to" EXISTS job)" 0
}

@test "a slot moved between acquire and release: the release follows MOVED" {
    slot=$(cluster_keyslot job)
    from=$(slot_owner_port "$slot")
    to=$(other_port "$from")
    MOVING="$slot $from $to"
    # A long TTL: no renewal comes between the move and the release.
    rl_start -v --ttl 60s job -- bash -c 'g=$0; '"$AWAIT" "$GATE"
    wait_for 10 ckey_exists job
    move_slot "$slot" "$from" "$to"
    assert_equal "$(cli "$to" EXISTS job)" 1
    touch "$GATE"
    rl_finish 10
    assert_equal "$RL_STATUS" 0
    assert_equal "$(count_lines "$RL_ERR" "(MOVED)")" 1
    file_contains "$RL_ERR" "released lock 'job'"
    assert_equal "$(cli "$to" EXISTS job)" 0
}

@test "a first seed that is down is skipped; all seeds down exits 69" {
    dead=$(free_port)
    seeds=$(echo "$CLUSTER_PORTS" | sed 's/\([0-9]*\)/127.0.0.1:\1/g; s/ /,/g')
    run "$RL" -u "redis-cluster://127.0.0.1:$dead,$seeds" job -- echo ran
    assert_success
    assert_output ran
    run -69 "$RL" -u "redis-cluster://127.0.0.1:$dead,127.0.0.1:$(free_port)" job -- echo ran
    assert_output --regexp "^redlock-run: .*no Redis Cluster node answered.*127.0.0.1:$dead"
    refute_output --partial ran
}

@test "a seed now served by a server that refuses us is skipped; only refusals end in their code" {
    # A master's or seed's address that another server took over (a reused port or IP): one
    # that wants a password, one without cluster mode. ciAH: a run ended with 77 on the first.
    seeds=$(echo "$CLUSTER_PORTS" | sed 's/\([0-9]*\)/127.0.0.1:\1/g; s/ /,/g')
    redis_start --requirepass other
    local foreign=$REDIS_PORT
    run "$RL" -u "redis-cluster://127.0.0.1:$foreign,$seeds" job -- echo ran
    assert_success
    assert_output ran
    run -77 "$RL" -u "redis-cluster://127.0.0.1:$foreign,127.0.0.1:$(free_port)" job -- echo ran
    assert_output --partial NOAUTH
    refute_output --partial ran
    redis_stop
    redis_start
    # Its script cache warm, so that the acquire sent to it with CLUSTER SLOTS (a run's first
    # write) runs there and takes the name; it is given back once the map is refused.
    run -0 "$RL" -u "redis://127.0.0.1:$REDIS_PORT" warm -- true
    run "$RL" -u "redis-cluster://127.0.0.1:$REDIS_PORT,$seeds" job -- echo ran
    assert_success
    assert_output ran
    key_absent job
    # Nothing of the run is left there but the fence counter it raised.
    assert_equal "$(cli "$REDIS_PORT" KEYS '*job*' | tr '\n' ' ')" "{job}:fence "
}

@test "a nested run for the same cluster lock runs its command directly" {
    # The nested run finds the cluster through REDLOCK_URL, passed on only with --keep-env.
    run "$RL" --keep-env job -- "$RL" job -- sh -c 'echo "nested $REDLOCK_FENCE"'
    assert_success
    assert_output --regexp '^nested [0-9]+$'
}

@test "a database other than 0, or a server without cluster mode, is a usage error" {
    run -64 "$RL" -u "redis-cluster://127.0.0.1:${CLUSTER_PORTS%% *}/3" job -- true
    assert_output --partial "only database 0"
    run -64 "$RL" -u "redis-cluster://127.0.0.1:1,,127.0.0.1:2" job -- true
    assert_output --partial "seed 2 is empty"
    redis_start
    run -64 "$RL" -u "redis-cluster://127.0.0.1:$REDIS_PORT" job -- true
    assert_output --partial "not a Redis Cluster node"
}

@test "nodes that redirect a slot to each other give up after 5 redirections with exit 69" {
    slot=$(cluster_keyslot job)
    owner=$(slot_owner_port "$slot")
    other=$(other_port "$owner")
    # Each of the two claims the other owns the slot: MOVED back and forth, for ever.
    RESTORE="$slot $owner"
    cli "$owner" CLUSTER SETSLOT "$slot" NODE "$(node_id "$other")" >/dev/null
    cli "$other" CLUSTER SETSLOT "$slot" NODE "$(node_id "$owner")" >/dev/null
    run -69 "$RL" -v job -- touch "$BATS_TEST_TMPDIR/ran"
    assert_line --regexp "^redlock-run: .*redirected EVAL more than 5 times; last: MOVED $slot "
    assert_equal "$(count_lines <(echo "$output") "(MOVED)")" 5
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "every node is logged in to with the URL's or REDISCLI_AUTH's password" {
    # Passwords on the masters only: the cluster bus does not use AUTH.
    AUTH_SET=1
    for port in $CLUSTER_PORTS; do cli "$port" CONFIG SET requirepass pw >/dev/null; done
    run -77 "$RL" job -- true
    assert_output --partial NOAUTH
    names=()
    for port in $CLUSTER_PORTS; do
        name=$(REDISCLI_AUTH=pw name_on_port "$port" lock)
        names+=("$name")
        REDISCLI_AUTH=pw run "$RL" "$name" -- echo ran
        assert_success
        assert_output ran
    done
    echo pw >"$BATS_TEST_TMPDIR/pwfile"
    run "$RL" --password-file "$BATS_TEST_TMPDIR/pwfile" list
    assert_success
    REDLOCK_URL="${CLUSTER_URL/:\/\//://:pw@}" run "$RL" "${names[0]}" -- echo ran
    assert_success
    assert_output ran
}

@test "status checks the eviction policy on the master that holds the lock" {
    # One name per master, each time with an evicting policy on that master alone: a check sent
    # to any other master (the first of the slot map, say) sees noeviction and says nothing.
    local port name i
    for port in $CLUSTER_PORTS; do
        for i in $(seq 1 200); do
            name="evict-$i"
            [ "$(slot_owner_port "$(cluster_keyslot "$name")")" = "$port" ] && break
        done
        cli "$port" CONFIG SET maxmemory-policy allkeys-lru >/dev/null
        run -1 "$RL" status "$name"
        cli "$port" CONFIG SET maxmemory-policy noeviction >/dev/null
        assert_output --partial "has maxmemory-policy allkeys-lru on the master that holds the lock"
    done
}

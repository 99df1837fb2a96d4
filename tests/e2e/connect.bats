#!/usr/bin/env bats
# Reaching and logging in to Redis: passwords from the URL, REDISCLI_AUTH or a file, ACL users,
# unix sockets, database selection and IPv6.
load helpers
bats_require_minimum_version 1.5.0

teardown() { redis_stop; }

# Shows the lock's value as seen in database $1 while the command runs.
SHOW_DB='redis-cli -p "$REDIS_PORT" ${CLI_OPTS:-} -n "$0" GET "$REDLOCK_KEY"'

@test "a wrong password exits 77 with the endpoint named and the password masked" {
    CLI_OPTS="-a pw --no-auth-warning" redis_start --requirepass pw
    run -77 "$RL" -u "redis://:wrongpass@127.0.0.1:$REDIS_PORT" job -- touch "$BATS_TEST_TMPDIR/ran"
    assert_output --partial "127.0.0.1:$REDIS_PORT"
    refute_output --partial wrongpass
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    REDISCLI_AUTH=wrongpass run -77 "$RL" job -- true
}

@test "no password for a server that requires one exits 77" {
    CLI_OPTS="-a pw --no-auth-warning" redis_start --requirepass pw
    run -77 "$RL" job -- true
    assert_output --regexp '^redlock-run: .*NOAUTH'
}

@test "REDISCLI_AUTH supplies the password" {
    CLI_OPTS="-a pw --no-auth-warning" redis_start --requirepass pw
    REDISCLI_AUTH=pw run "$RL" job -- true
    assert_success
    assert_output ''
}

@test "--password-file supplies the password" {
    CLI_OPTS="-a pw --no-auth-warning" redis_start --requirepass pw
    echo pw > "$BATS_TEST_TMPDIR/pwfile"
    chmod 600 "$BATS_TEST_TMPDIR/pwfile"
    run "$RL" --password-file "$BATS_TEST_TMPDIR/pwfile" job -- true
    assert_success
    assert_output ''
    REDLOCK_PASSWORD_FILE="$BATS_TEST_TMPDIR/pwfile" run "$RL" job -- true
    assert_success
}

@test "a password in -u works but warns; the same URL in REDLOCK_URL does not warn" {
    CLI_OPTS="-a pw --no-auth-warning" redis_start --requirepass pw
    run --separate-stderr "$RL" -u "redis://:pw@127.0.0.1:$REDIS_PORT" job -- echo ran
    assert_success
    assert_output ran
    [[ "$stderr" == "redlock-run: "*"--password-file"* ]]
    [[ "$stderr" != *pw@* ]]
    REDLOCK_URL="redis://:pw@127.0.0.1:$REDIS_PORT" run --separate-stderr "$RL" job -- echo ran
    assert_success
    assert_output ran
    assert_equal "$stderr" ''
}

@test "an ACL user logs in with user and password" {
    redis_start
    cli "$REDIS_PORT" ACL SETUSER bob on '>bobpw' '~*' '+@all' >/dev/null
    run "$RL" -u "redis://bob:bobpw@127.0.0.1:$REDIS_PORT" acljob -- echo ran
    assert_success
    assert_line ran
    key_absent acljob
    run -77 "$RL" -u "redis://bob:nope@127.0.0.1:$REDIS_PORT" acljob -- true
    refute_output --partial nope
}

@test "an ACL user denied the lock's commands exits 77" {
    redis_start
    cli "$REDIS_PORT" ACL SETUSER eve on '>evepw' '~*' '-@all' '+ping' >/dev/null
    run -77 "$RL" -u "redis://eve:evepw@127.0.0.1:$REDIS_PORT" denied -- touch "$BATS_TEST_TMPDIR/ran"
    assert_output --partial NOPERM
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "a unix socket URL works, with its database" {
    redis_start
    run "$RL" -u "unix://$REDIS_DIR/redis.sock" sockjob -- sh -c "$SHOW_DB" 0
    assert_success
    assert_output --regexp '^[0-9a-f]{32}$'
    run "$RL" -u "unix://$REDIS_DIR/redis.sock?db=3" sockjob -- sh -c "$SHOW_DB" 3
    assert_success
    assert_output --regexp '^[0-9a-f]{32}$'
    key_absent sockjob
    assert_equal "$(cli "$REDIS_PORT" -n 3 EXISTS '{sockjob}:fence')" 1
}

@test "the /db in a redis:// URL selects the database" {
    redis_start
    run "$RL" -u "$REDIS_URL/5" dbjob -- sh -c "$SHOW_DB; redis-cli -p \"\$REDIS_PORT\" EXISTS dbjob" 5
    assert_success
    assert_line --index 0 --regexp '^[0-9a-f]{32}$'
    assert_line --index 1 0  # nothing in database 0
    assert_equal "$(cli "$REDIS_PORT" -n 5 EXISTS '{dbjob}:fence')" 1
}

@test "a database that does not exist is an error, not a silent database 0" {
    redis_start
    # The scripts cached: the acquire, sent in the SELECT's write, runs in database 0 then.
    run -0 "$RL" -u "$REDIS_URL" warm -- true
    run "$RL" -u "$REDIS_URL/999" job -- touch "$BATS_TEST_TMPDIR/ran"
    assert_equal "$status" 64
    assert_output --partial 'cannot select database 999'
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    # Given back there, on the same connection, before the error.
    assert_equal "$(cli "$REDIS_PORT" EXISTS job '{job}:info')" 0
}

@test "a password the server does not need is refused as before, and leaves no lock behind" {
    redis_start
    # The scripts cached: the acquire, sent in the AUTH's write, runs as the default user then.
    run -0 "$RL" -u "$REDIS_URL" warm -- true
    REDISCLI_AUTH=stale run -77 "$RL" -u "$REDIS_URL" job -- touch "$BATS_TEST_TMPDIR/ran"
    assert_output --partial "refused authentication"
    assert_output --partial "(the password came from REDISCLI_AUTH in the environment)"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    assert_equal "$(cli "$REDIS_PORT" EXISTS job '{job}:info')" 0
}

@test "an IPv6 address in brackets works" {
    redis_start --bind 127.0.0.1 -::1
    redis-cli -h ::1 -p "$REDIS_PORT" PING 2>/dev/null | grep -q PONG || skip "no IPv6 loopback"
    run "$RL" -u "redis://[::1]:$REDIS_PORT" v6job -- sh -c 'redis-cli -h ::1 -p "$REDIS_PORT" GET v6job'
    assert_success
    assert_output --regexp '^[0-9a-f]{32}$'
}

#!/usr/bin/env bats
# Bad input that needs a real server or a real file to be refused: a database the server does
# not have, a FIFO where a secret file belongs, a garbage token inherited from a parent run. Each is
# refused with its exit code and one line, with no lock taken and the planted foreign lock
# untouched (see hostile_helpers.bash). Every refusal decided from argv and the environment alone
# is a row of tests/unit/cli/refusals_test.cpp; one test here proves that such a refusal never
# connects to Redis.
load helpers
load hostile_helpers
bats_require_minimum_version 1.5.0

setup_file() { redis_start 3>&-; }
teardown_file() { redis_stop; }

setup() {
    plant_sentinel
    RAN="$BATS_TEST_TMPDIR/ran"
    JOB=(job -- touch "$RAN")
}

teardown() { assert_untouched; }

# The server's count of connections it ever accepted (INFO's own connection included).
connections_received() { cli "$REDIS_PORT" INFO stats | tr -d '\r' | sed -n 's/^total_connections_received://p'; }

# The unit rows cannot see a connection; this can. Refusals of each kind (an option's value, the
# environment, a name, a subcommand's options) pointed at the live server (REDLOCK_URL).
@test "a refused invocation makes no connection to Redis" {
    local before after
    before=$(connections_received)
    refuse 64 "invalid duration 'abc' for --ttl" --ttl abc "${JOB[@]}"
    REDLOCK_TTL=5x refuse 64 "invalid duration '5x' for REDLOCK_TTL" "${JOB[@]}"
    refuse 64 "contains a control character" $'a\nb' -- touch "$RAN"
    refuse 64 "option '--ttl' is for running a command, not for 'status'" status --ttl 5s held
    refuse 64 "give either --token or --force" release --token t --force held
    after=$(connections_received)
    # One more: the second INFO's own.
    assert_equal "$after" "$((before + 1))"
}

@test "URL with database 99999, which the server does not have" {
    refuse 64 "cannot select database 99999" -u "$REDIS_URL/99999" "${JOB[@]}"
}

@test "a FIFO as --password-file, --sentinel-password-file, --cacert, --cert or --key is refused at once" {
    local fifo="$BATS_TEST_TMPDIR/fifo"
    mkfifo "$fifo"
    refuse 64 "the password file '$fifo' is not a regular file \\(a FIFO\\)$" --password-file "$fifo" "${JOB[@]}"
    refuse 64 "the password file '$fifo' is not a regular file \\(a FIFO\\)$" \
        -u "redis-sentinel://127.0.0.1:1/mymaster" --sentinel-password-file "$fifo" "${JOB[@]}"
    refuse 64 "the --cacert file '$fifo' is not a regular file \\(a FIFO\\)$" \
        -u "rediss://127.0.0.1:$REDIS_PORT" --cacert "$fifo" "${JOB[@]}"
    refuse 64 "the --cert file '$fifo' is not a regular file \\(a FIFO\\)$" \
        -u "rediss://127.0.0.1:$REDIS_PORT" --cert "$fifo" --key "$fifo" "${JOB[@]}"
}

@test "an inherited REDLOCK_TOKEN that is garbage does not let a nested run through" {
    REDLOCK_KEY=job REDLOCK_TOKEN=$'x\ny' REDLOCK_REDIS="127.0.0.1:$REDIS_PORT/0" \
        refuse 76 "no longer held by the parent redlock-run" "${JOB[@]}"
    REDLOCK_KEY=held REDLOCK_TOKEN="$(head -c 100000 /dev/zero | tr '\0' t)" \
        REDLOCK_REDIS="127.0.0.1:$REDIS_PORT/0" refuse 76 "no longer held by the parent" held -- touch "$RAN"
}

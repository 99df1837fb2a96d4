#!/usr/bin/env bats
# Bad input on the command line and in the environment: durations, URLs, lock names, options.
# Each is refused with its exit code and one line naming the problem, at once, with no lock
# taken and the planted foreign lock untouched (see hostile_helpers.bash).
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

# --- durations -----------------------------------------------------------------------------------

@test "duration 0 for --ttl" {
    refuse 64 "invalid duration '0' for --ttl: must be greater than zero$" --ttl 0 "${JOB[@]}"
}

@test "duration -1s" {
    refuse 64 "invalid duration '-1s' for --ttl: must be positive$" --ttl -1s "${JOB[@]}"
}

@test "duration 1e9h" {
    refuse 64 "invalid duration '1e9h' for --ttl: unknown unit 'e'" --ttl 1e9h "${JOB[@]}"
}

@test "duration 99999999999999999999s" {
    refuse 64 "invalid duration '99999999999999999999s' for --kill-after: too large$" \
        --kill-after 99999999999999999999s "${JOB[@]}"
}

@test "duration 5x" {
    refuse 64 "invalid duration '5x' for --max-runtime: unknown unit 'x'" --max-runtime 5x "${JOB[@]}"
}

@test "empty duration for --ttl" {
    refuse 64 "invalid duration '' for --ttl: empty$" --ttl '' "${JOB[@]}"
}

@test "empty duration for --wait, --min-hold, --max-runtime and --renew-every is not 'not given'" {
    local opt
    for opt in --wait --min-hold --max-runtime --renew-every; do
        refuse 64 "invalid duration '' for $opt: empty$" "$opt" '' "${JOB[@]}"
    done
}

@test "empty duration through --wait=" {
    refuse 64 "wait" --wait= "${JOB[@]}"
}

@test "a duration finer than a millisecond" {
    refuse 64 "invalid duration '1.0005s' for --connect-timeout: finer than a millisecond" \
        --connect-timeout 1.0005s "${JOB[@]}"
}

@test "a duration missing its last unit, 1h30" {
    refuse 64 "invalid duration '1h30' for --ttl: missing unit$" --ttl 1h30 "${JOB[@]}"
}

@test "a duration with a space or a newline in it" {
    refuse 64 "invalid duration ' 5s' for --ttl: expected a number" --ttl ' 5s' "${JOB[@]}"
    refuse 64 "invalid duration '5s\\\\x0a' for --ttl: unknown unit" --ttl $'5s\n' "${JOB[@]}"
}

@test "a 100 KB duration is quoted shortened" {
    local big
    big=$(head -c 100000 /dev/zero | tr '\0' 7)
    refuse 64 "invalid duration '7{80}\\.\\.\\.\\(100000 bytes\\)' for --ttl: too large$" --ttl "$big" "${JOB[@]}"
    [ "${#stderr}" -lt 300 ]
}

@test "a bad duration from the environment names the option" {
    REDLOCK_TTL=abc refuse 64 "invalid duration 'abc' for --ttl" "${JOB[@]}"
    REDLOCK_COMMAND_TIMEOUT=-1 refuse 64 "invalid duration '-1' for --command-timeout" "${JOB[@]}"
}

@test "a TTL too short to renew" {
    refuse 64 "--ttl 50ms is too short" --ttl 50ms "${JOB[@]}"
}

@test "--renew-every above half the TTL" {
    refuse 64 "--renew-every \\(20s\\) must be at most half of --ttl \\(30s\\)" --renew-every 20s "${JOB[@]}"
}

@test "--wait beyond the ten-year limit" {
    refuse 64 "invalid duration '5000d' for --wait: too large$" --wait 5000d "${JOB[@]}"
}

# --- exit codes and enumerations -----------------------------------------------------------------

@test "conflict exit code 256, -1 and abc" {
    refuse 64 "invalid value '256' for --conflict-exit-code: expected 0-255$" -E 256 "${JOB[@]}"
    refuse 64 "invalid value '-1' for --conflict-exit-code" -E -1 "${JOB[@]}"
    REDLOCK_CONFLICT_EXIT_CODE=abc refuse 64 "invalid value 'abc' for --conflict-exit-code" "${JOB[@]}"
}

@test "an unknown --on-lost action" {
    refuse 64 "invalid value 'stop' for --on-lost: expected term, kill or ignore$" --on-lost stop "${JOB[@]}"
}

@test "a flag variable that is not a boolean" {
    REDLOCK_QUIET=maybe refuse 64 "quiet.*maybe" "${JOB[@]}"
}

# --- URLs ----------------------------------------------------------------------------------------

@test "URL with an unknown scheme" {
    refuse 64 "invalid Redis URL 'ftp://127.0.0.1': expected redis://" -u ftp://127.0.0.1 "${JOB[@]}"
}

@test "URL with port 0" {
    refuse 64 "invalid Redis URL 'redis://127.0.0.1:0': port must be 1-65535$" -u redis://127.0.0.1:0 "${JOB[@]}"
}

@test "URL with port 70000" {
    refuse 64 "port must be 1-65535$" -u redis://127.0.0.1:70000 "${JOB[@]}"
}

@test "URL with a port that is not a number" {
    refuse 64 "port must be 1-65535$" -u redis://127.0.0.1:63x9 "${JOB[@]}"
    refuse 64 "empty port$" -u redis://127.0.0.1: "${JOB[@]}"
}

@test "URL missing the host" {
    refuse 64 "invalid Redis URL 'redis://:6379': missing host$" -u redis://:6379 "${JOB[@]}"
    refuse 64 "missing host$" -u redis:// "${JOB[@]}"
    refuse 64 "missing host$" -u redis://user@/2 "${JOB[@]}"
}

@test "URL with an unclosed IPv6 bracket" {
    refuse 64 "unclosed '\\[' in an IPv6 address$" -u 'redis://[::1:6379' "${JOB[@]}"
}

@test "URL with brackets around something that is not IPv6" {
    refuse 64 "not an IPv6 address inside" -u 'redis://[zz::1]:6379' "${JOB[@]}"
    refuse 64 "not an IPv6 address inside" -u 'redis://[127.0.0.1]:6379' "${JOB[@]}"
    refuse 64 "missing host|not an IPv6" -u 'redis://[]:6379' "${JOB[@]}"
}

@test "URL with IPv6 not in brackets, or junk after the bracket" {
    refuse 64 "put an IPv6 address in brackets" -u 'redis://::1:6379' "${JOB[@]}"
    refuse 64 "expected ':port' after '\\]'" -u 'redis://[::1]6379' "${JOB[@]}"
}

@test "URL with database -1" {
    refuse 64 "the path must be a database number$" -u "$REDIS_URL/-1" "${JOB[@]}"
}

@test "URL with database 99999, which the server does not have" {
    refuse 64 "cannot select database 99999" -u "$REDIS_URL/99999" "${JOB[@]}"
}

@test "URL with a database that is not a number" {
    refuse 64 "the path must be a database number$" -u "$REDIS_URL/two" "${JOB[@]}"
    refuse 64 "the only query parameter is db=N$" -u "unix://$REDIS_DIR/redis.sock?db=x" "${JOB[@]}"
}

@test "URL with a bad %-escape in the password, the user and the socket path" {
    refuse 64 "bad %-escape in the password$" -u 'redis://u:p%zz@127.0.0.1' "${JOB[@]}"
    refuse 64 "bad %-escape in the password$" -u 'redis://u:p%4@127.0.0.1' "${JOB[@]}"
    refuse 64 "bad %-escape in the user name$" -u 'redis://%g0:p@127.0.0.1' "${JOB[@]}"
    refuse 64 "bad %-escape in the path$" -u 'unix:///tmp/%' "${JOB[@]}"
}

@test "a 100 KB URL is quoted shortened" {
    local big
    big="redis://$(head -c 100000 /dev/zero | tr '\0' h):6379"
    refuse 64 "invalid Redis URL 'redis://h{72}\\.\\.\\.\\(100013 bytes\\)': the host name is longer than 253 bytes$" \
        -u "$big" "${JOB[@]}"
    [ "${#stderr}" -lt 300 ]
}

# Found by tests/fuzz/run: these two quoted the bad part whole.
@test "a 100 KB cluster seed or sentinel address is quoted shortened" {
    local big
    big=$(head -c 100000 /dev/zero | tr '\0' h)
    refuse 64 "invalid Redis URL 'redis-cluster://a:1,h{60}\\.\\.\\.\\(100020 bytes\\)': seed 2 \\('h{80}\\.\\.\\.\\(100000 bytes\\)'\\) is not host\\[:port\\]$" \
        -u "redis-cluster://a:1,$big" "${JOB[@]}"
    [ "${#stderr}" -lt 400 ]
    refuse 64 "invalid Redis URL 'redis-sentinel://a:1,h{59}\\.\\.\\.\\(100030 bytes\\)': the host name is longer than 253 bytes$" \
        -u "redis-sentinel://a:1,$big/mymaster" "${JOB[@]}"
    [ "${#stderr}" -lt 400 ]
}

@test "a unix socket path too long for a socket address" {
    refuse 64 "the socket path is longer than 107 bytes$" -u "unix:///$(head -c 200 /dev/zero | tr '\0' s)" "${JOB[@]}"
}

@test "a relative unix socket path" {
    refuse 64 "expected unix:///absolute/path.sock$" -u unix://redis.sock "${JOB[@]}"
}

@test "an empty URL" {
    refuse 64 "invalid Redis URL '': expected redis://" -u '' "${JOB[@]}"
}

@test "a bad URL from REDLOCK_URL" {
    REDLOCK_URL='redis://127.0.0.1:99999' refuse 64 "port must be 1-65535$" "${JOB[@]}"
}

@test "no error about a URL or a URL list ever shows the password" {
    local secret=Sx9qTz pw value
    for pw in "$secret,redis://$secret" "$secret,redis://x@$secret" "$secret@$secret" \
        "$secret%$secret" "$secret%zz$secret" "$secret"$'\n'"$secret" "$secret%00$secret"; do
        for value in "redis://u:$pw@127.0.0.1:99999" "redis://a:1,redis://u:$pw@h:0,redis://c" \
            "redis-cluster://u:$pw@h1:0,h2" "redis://u:$pw@[::1%zz]"; do
            run --separate-stderr env REDLOCK_URL="$value" "$RL" "${JOB[@]}"
            assert_equal "$status" 64
            if [[ $stderr == *"$secret"* ]]; then
                echo "REDLOCK_URL=$value: $stderr" >&2
                return 1
            fi
            run --separate-stderr "$RL" -u "$value" "${JOB[@]}"
            assert_equal "$status" 64
            [[ $stderr != *"$secret"* ]] || { echo "-u $value: $stderr" >&2; return 1; }
        done
    done
}

@test "an IPv6 zone id not written as %25zone is a usage error" {
    refuse 64 "a '%' inside '.....' starts a zone id, written '%25' and the zone" -u 'redis://[::1%zz]' "${JOB[@]}"
}

@test "a NUL byte escaped in a URL is refused and shown as %00" {
    refuse 64 "invalid Redis URL 'unix:///tmp/x%00y': a NUL byte \\(%00\\) in the path$" \
        -u 'unix:///tmp/x%00y' "${JOB[@]}"
}

# --- names ---------------------------------------------------------------------------------------

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

@test "an empty lock name" {
    refuse 64 "the lock NAME must not be empty$" '' -- touch "$RAN"
}

@test "a lock name as long as one argument can be (128 KiB; 1 MB cannot pass execve)" {
    local big
    big=$(head -c 131071 /dev/zero | tr '\0' n)
    refuse 64 "the lock key \\(--prefix and NAME\\) is 131071 bytes long; at most 1024$" "$big" -- touch "$RAN"
}

@test "a 100 KB prefix through the environment" {
    REDLOCK_PREFIX=$(head -c 100000 /dev/zero | tr '\0' p) \
        refuse 64 "the lock key \\(--prefix and NAME\\) is 100003 bytes long" "${JOB[@]}"
}

@test "a lock name with a newline" {
    refuse 64 "the lock NAME 'a\\\\nb' contains a control character$" $'a\nb' -- touch "$RAN"
    refuse 64 "the lock NAME 'job\\\\n' contains a control character$" $'job\n' -- touch "$RAN"
}

@test "a lock name with an escape sequence" {
    refuse 64 "the lock NAME 'x\\\\x1b\\[2J' contains a control character$" $'x\e[2J' -- touch "$RAN"
}

@test "control characters in the prefix through the environment (a NUL cannot pass execve)" {
    REDLOCK_PREFIX=$'locks:\r' refuse 64 "the --prefix 'locks:\\\\r' contains a control character$" "${JOB[@]}"
    REDLOCK_PREFIX=$'a\tb' refuse 64 "contains a control character$" "${JOB[@]}"
}

@test "an inherited REDLOCK_TOKEN that is garbage does not let a nested run through" {
    REDLOCK_KEY=job REDLOCK_TOKEN=$'x\ny' REDLOCK_REDIS="127.0.0.1:$REDIS_PORT/0" \
        refuse 76 "no longer held by the parent redlock-run" "${JOB[@]}"
    REDLOCK_KEY=held REDLOCK_TOKEN="$(head -c 100000 /dev/zero | tr '\0' t)" \
        REDLOCK_REDIS="127.0.0.1:$REDIS_PORT/0" refuse 76 "no longer held by the parent" held -- touch "$RAN"
}

# --- options -------------------------------------------------------------------------------------

@test "conflicting: --shell and a COMMAND" {
    refuse 64 "give either --shell 'CMD' or COMMAND \\[ARGS...\\], not both$" -c 'touch x' job -- touch "$RAN"
}

@test "conflicting: --token and --force for release" {
    refuse 64 "give either --token or --force to 'release', not both$" release --token t --force held
}

@test "conflicting: a release option for a run, a run option for status" {
    refuse 64 "option '--token' is for release, not for running a command$" --token t "${JOB[@]}"
    refuse 64 "option '--ttl' is for running a command, not for 'status'$" status --ttl 5s held
    refuse 64 "option '--json' is only for status, list and history, not for 'release'$" release --json --force held
}

@test "repeated: --ttl twice" {
    refuse 64 "ttl" --ttl 5s --ttl 10s "${JOB[@]}"
}

@test "repeated: --token twice for release is our own message, not CLI11's" {
    refuse 64 "--token given 2 times; give it once$" release --token a --token b job
    refuse 64 "--ttl given 3 times; give it once$" --ttl 5s --ttl 6s --ttl 7s "${JOB[@]}"
}

@test "repeated: --shell before and after NAME" {
    refuse 64 "--shell given twice$" -c 'touch x' job -c 'touch y'
}

@test "repeated: two lock names for status" {
    refuse 64 "'status' takes one lock NAME, got 2$" status held job
}

@test "unknown long and short options" {
    refuse 64 "unknown option '--frobnicate' \\(see --help\\)$" --frobnicate "${JOB[@]}"
    refuse 64 "unknown option '-Z' \\(see --help\\)$" -Z "${JOB[@]}"
    refuse 64 "unknown option '-Z'" -qZ "${JOB[@]}"
}

@test "an option missing its value, and a flag given one" {
    refuse 64 "option '--ttl' needs a value$" --ttl
    refuse 64 "option '--quiet' takes no value$" --quiet=yes "${JOB[@]}"
}

@test "a missing COMMAND and a missing NAME" {
    refuse 64 "missing the COMMAND to run under lock 'job'$" job --
    refuse 64 "missing the lock NAME" -t 5s
    refuse 64 "--shell needs a non-empty command$" -c '' job
}

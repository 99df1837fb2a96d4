#!/usr/bin/env bats
# --ping URL: dead-man pings in Healthchecks.io's URLs, against a local stand-in (ping_server.py)
# that records each request it receives: start and success or URL/<exit status> for the run that
# holds the lock, nothing from a run that skips, a hung service bounded by --ping-timeout, the
# URL's secret never printed, libcurl loaded only with --ping.
load helpers
bats_require_minimum_version 1.5.0

# The check's secret, as in a Healthchecks.io ping URL (its UUID).
SECRET=0f5d3c2a-secret-uuid

setup() {
    redis_start
    PINGS=$BATS_TEST_TMPDIR/pings
    mkdir -p "$PINGS"
}
teardown() {
    rl_cleanup
    if [ -n "${HOLDER:-}" ]; then
        touch "$BATS_TEST_TMPDIR/gate"
        wait "$HOLDER" 2>/dev/null || true
    fi
    if [ -n "${PING_PID:-}" ]; then kill "$PING_PID" 2>/dev/null || true; fi
    redis_stop
}

# ping_server [hang]: starts ping_server.py; sets PING_URL to a check URL on it.
ping_server() {
    /usr/bin/python3 "$BATS_TEST_DIRNAME/ping_server.py" "$PINGS" "$@" 3>&- &
    PING_PID=$!
    wait_for 10 file_exists "$PINGS/port"
    PING_URL="http://127.0.0.1:$(cat "$PINGS/port")/$SECRET"
}

# The paths the server received, one a line (empty when none came).
received() { cat "$PINGS/requests" 2>/dev/null || true; }

@test "the run that holds the lock pings start when the command starts, then success" {
    ping_server
    run "$RL" -v --ping "$PING_URL" job -- true
    assert_success
    assert_equal "$(received)" "$(printf '/%s/start\n/%s' "$SECRET" "$SECRET")"
    # -v reports each ping, without the URL's path.
    assert_output --partial "sent the start ping for lock 'job' to http://127.0.0.1:"
    assert_output --partial "sent the success ping for lock 'job'"
    refute_output --partial "$SECRET"
}

@test "a failing command pings URL/<exit status>; one that cannot start pings URL/127 alone" {
    ping_server
    REDLOCK_PING=$PING_URL run -3 "$RL" job -- sh -c 'exit 3'
    assert_equal "$(received)" "$(printf '/%s/start\n/%s/3' "$SECRET" "$SECRET")"
    rm "$PINGS/requests"
    run -127 "$RL" --ping "$PING_URL" job -- /nonexistent/command
    assert_equal "$(received)" "/$SECRET/127"
}

@test "a host that skips because the lock or its once-per slot was taken sends nothing" {
    ping_server
    hold_until job "$BATS_TEST_TMPDIR/gate"
    run -75 "$RL" --ping "$PING_URL" job -- touch "$BATS_TEST_TMPDIR/ran"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    assert_equal "$(received)" ""
    touch "$BATS_TEST_TMPDIR/gate"
    wait "$HOLDER"
    HOLDER=
    run -0 "$RL" --ping "$PING_URL" --once-per 1h slotjob -- true
    run -75 "$RL" --ping "$PING_URL" --once-per 1h slotjob -- true
    assert_equal "$(received)" "$(printf '/%s/start\n/%s' "$SECRET" "$SECRET")"
}

@test "the command does not wait for a start ping that hangs" {
    ping_server hang
    # The command runs only once the service has the start request, which it never answers: a
    # start ping sent before the command would hold it for the whole --ping-timeout (60s).
    rl_start --ping "$PING_URL" --ping-timeout 60s job -- sh -c \
        'until grep -q /start "$0/requests" 2>/dev/null; do sleep 0.05; done; touch "$0/ran"' \
        "$PINGS"
    wait_for 20 file_exists "$PINGS/ran"
}

@test "a ping service that never answers delays the exit by --ping-timeout at most, with a warning" {
    ping_server hang
    local began=$SECONDS
    run -5 "$RL" --ping "$PING_URL" --ping-timeout 1s job -- sh -c 'exit 5'
    # Each ping gives up within 1s; the bound is far below the default 10s it would take
    # otherwise (and below forever, without a bound).
    [ $((SECONDS - began)) -lt 8 ]
    assert_output --regexp "^redlock-run: could not send the failure ping for lock 'job' to http://127\.0\.0\.1:[0-9]+/\.\.\. after [0-9] tr(y|ies) within 1s: .*; the exit status stays the run's$"
    refute_output --partial "$SECRET"
}

@test "userinfo and query of the URL are never printed" {
    ping_server hang
    local url
    url="http://user:hunter2@127.0.0.1:$(cat "$PINGS/port")/$SECRET?key=qsecret"
    run -0 "$RL" --ping "$url" --ping-timeout 200ms job -- true
    assert_output --partial "could not send the success ping"
    refute_output --partial hunter2
    refute_output --partial qsecret
    refute_output --partial "$SECRET"
}

@test "libcurl is loaded only with --ping; a libcurl that cannot be loaded is 69 before the lock" {
    ping_server
    local maps='grep -c "/libcurl" "/proc/$PPID/maps" || true'
    run -0 "$RL" plainjob -- sh -c "$maps"
    assert_output 0
    run -0 "$RL" --ping "$PING_URL" pingjob -- sh -c "$maps"
    [ "$output" -ge 1 ]
    mkdir "$BATS_TEST_TMPDIR/lib"
    echo 'not a shared library' > "$BATS_TEST_TMPDIR/lib/libcurl.so.4"
    cp "$BATS_TEST_TMPDIR/lib/libcurl.so.4" "$BATS_TEST_TMPDIR/lib/libcurl-gnutls.so.4"
    rm "$PINGS/requests"
    LD_LIBRARY_PATH="$BATS_TEST_TMPDIR/lib" run -69 "$RL" --ping "$PING_URL" nocurl -- \
        touch "$BATS_TEST_TMPDIR/ran"
    assert_equal "${#lines[@]}" 1
    assert_output --regexp "^redlock-run: --ping needs libcurl \(libcurl\.so\.4 from Debian's libcurl4, or libcurl3-gnutls\), which could not be loaded: .*libcurl\.so\.4.*; .*libcurl-gnutls\.so\.4"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    key_absent nocurl
    assert_equal "$(received)" ""
    LD_LIBRARY_PATH="$BATS_TEST_TMPDIR/lib" run -0 "$RL" nocurl -- echo ran
    assert_output ran
}

@test "the command does not inherit REDLOCK_PING unless --keep-env" {
    ping_server
    REDLOCK_PING=$PING_URL run -0 "$RL" job -- sh -c 'echo "[${REDLOCK_PING:-}]"'
    assert_output "[]"
    REDLOCK_PING=$PING_URL run -0 "$RL" --keep-env job -- sh -c 'echo "[${REDLOCK_PING:-}]"'
    assert_output "[$PING_URL]"
}

# Helpers for the hostile-input battery: run redlock-run on one bad input and check everything
# the issue asks of the answer, and start fake servers that misbehave.
# shellcheck shell=bash

SENTINEL=sentinel-token-0123456789abcdef

# Puts one foreign lock in an otherwise empty database 0; nothing a bad input does may touch it.
plant_sentinel() {
    cli "$REDIS_PORT" FLUSHALL >/dev/null
    cli "$REDIS_PORT" SET held "$SENTINEL" PX 600000 >/dev/null
}

# The database still holds exactly the planted lock: no lock was taken (not even under a mangled
# name or a fence counter) and none was lost.
assert_untouched() {
    assert_equal "$(cli "$REDIS_PORT" -n 0 GET held)" "$SENTINEL"
    assert_equal "$(cli "$REDIS_PORT" -n 0 DBSIZE)" 1
}

# The bounds for refuse: 1 GiB of address space and 10s, or for a binary built with a
# sanitizer no address-space bound (its shadow memory alone reserves terabytes) and 60s (it
# runs several times slower; reading a 64 MiB hostile reply took over 10s on a busy machine).
# The release pass checks the real bounds.
hostile_vmem_kb() { if sanitized; then echo unlimited; else echo 1048576; fi; }
hostile_seconds() { if sanitized; then echo 60; else echo 10; fi; }

# refuse CODE REGEX ARGS...: redlock-run ARGS exits CODE within 10s (hostile_seconds: no hang;
# a crash would be 128+N), prints nothing on stdout, and exactly one line on stderr: "redlock-run: " and then
# something matching REGEX. The command, if ARGS has one, is expected not to have run.
refuse() {
    local code=$1 regex=$2
    shift 2
    # Bounded memory too: 1 GiB of address space is ample for a run with its threads, far
    # below what an unbounded reply buffer reaches in 10s. Not under a sanitizer, whose shadow
    # memory alone reserves terabytes of address space: the release pass checks the bound.
    run --separate-stderr timeout -s KILL "$(hostile_seconds)" \
        bash -c 'ulimit -v "$0" && exec "$@"' "${HOSTILE_VMEM_KB:-$(hostile_vmem_kb)}" "$RL" "$@"
    if [ "$status" -ne "$code" ]; then
        echo "exit status $status, expected $code; stderr: $stderr" >&2
        return 1
    fi
    assert_equal "$output" ''
    if [ "${#stderr_lines[@]}" -ne 1 ]; then
        echo "expected one line on stderr, got ${#stderr_lines[@]}: $stderr" >&2
        return 1
    fi
    if ! [[ "$stderr" =~ ^redlock-run:\ .*$regex ]]; then
        echo "stderr does not match '$regex': $stderr" >&2
        return 1
    fi
    [ ! -e "$BATS_TEST_TMPDIR/ran" ] || { echo "the command ran" >&2; return 1; }
}

# fake_start MODE [REPLY]: starts tests/e2e/fake_server.py; sets FAKE_PORT and FAKE_PID.
fake_start() {
    local portfile="$BATS_TEST_TMPDIR/fake.port"
    rm -f "$portfile"
    /usr/bin/python3 "$BATS_TEST_DIRNAME/fake_server.py" "$1" "$portfile" "${2:-}" 3>&- &
    FAKE_PID=$!
    wait_for 5 test -s "$portfile"
    FAKE_PORT=$(cat "$portfile")
}

fake_stop() {
    [ -n "${FAKE_PID:-}" ] || return 0
    kill "$FAKE_PID" 2>/dev/null || true
    wait "$FAKE_PID" 2>/dev/null || true
    FAKE_PID=
}

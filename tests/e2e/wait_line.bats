#!/usr/bin/env bats
# The live status line of a run that waits (--wait): shown only when stderr is a terminal,
# redrawn in place about once a second, erased when the wait ends; never on a non-terminal (cron
# mail stays clean) and never with -q. About 8 s: each test waits a second or two on purpose.
load helpers

setup() {
    redis_start
    GATE="$BATS_TEST_TMPDIR/gate"
}

teardown() {
    touch "$GATE"
    [ -z "${HOLDER:-}" ] || wait "$HOLDER" 2>/dev/null || true
    rl_cleanup
    redis_stop
}

drive() { /usr/bin/python3 "$BATS_TEST_DIRNAME/pty_drive.py" "$@"; }
queue_length_is() { [ "$(cli "$REDIS_PORT" LLEN "{$1}:wait")" = "$2" ]; }

@test "a waiter on a terminal shows holder, place, times in one line redrawn in place, erased when it takes the lock" {
    hold_until line "$GATE"
    # Someone waiting already: this run is second in the queue.
    rl_start -w 30 line -- true
    wait_for 5 queue_length_is line 1
    local holder="held by $(hostname) pid $HOLDER \\(user $(id -un)\\) for [0-9.]+m?s, expires in"
    # The command prints 42 only once it runs ("took:$((6*7))" as typed cannot match).
    run drive "expect:PROMPT" \
        "send:$RL -w 30 line -- sh -c 'echo took:\$((6*7))'; echo rc=\$?\n" \
        "expect:\\r\\x1b\\[Kredlock-run: waiting for lock 'line' \\(2nd in the queue; waited [0-9]+s, [0-9]+s left\\): $holder" \
        "expect:^[^\\n]*\\r\\x1b\\[Kredlock-run: waiting for lock 'line' \\(2nd in the queue; waited [0-9]+s" \
        "run:touch '$GATE'" \
        "expect:\\r\\x1b\\[Ktook:42" "expect:rc=0"
    assert_success
    rl_finish 10
    [ "$RL_STATUS" = 0 ]
    key_absent line
    queue_length_is line 0
}

@test "a line wider than the terminal is cut where a word ends, not inside one" {
    hold_until narrowly "$GATE"
    # 60 columns: 46 for the text after "redlock-run: ". Cut at the column, the line would end
    # "30s le"; cut at a word, it ends "30s..." (waited and left keep one and two digits here).
    run drive "expect:PROMPT" "send:stty cols 60\n" "expect:PROMPT" \
        "send:$RL -w 30 narrowly -- true; echo rc=\$?\n" \
        "expect:\\r\\x1b\\[Kredlock-run: waiting for lock 'narrowly' \\(waited [0-9]s, [0-9]{2}s\\.\\.\\.\\r" \
        "run:touch '$GATE'" "expect:rc=0"
    assert_success
}

@test "the line is erased before the message of a wait that runs out" {
    hold_until gaveup "$GATE"
    run drive "expect:PROMPT" \
        "send:$RL -w 1.5 gaveup -- true; echo rc=\$?\n" \
        "expect:redlock-run: waiting for lock 'gaveup' \\(waited [0-9]+s, [0-9]+s left\\): held by" \
        "expect:\\r\\x1b\\[Kredlock-run: lock 'gaveup' is held by [^\\r\\n]*; gave up after waiting 1.500s\\r?\\n" \
        "expect:rc=75"
    assert_success
    queue_length_is gaveup 0
}

@test "stderr that is not a terminal gets no status line, only the one message, even with a terminal around" {
    hold_until notty "$GATE"
    run drive "expect:PROMPT" \
        "send:$RL -w 1.5 notty -- true 2>'$BATS_TEST_TMPDIR/err'; echo rc=\$?\n" "expect:rc=75"
    assert_success
    run cat "$BATS_TEST_TMPDIR/err"
    [ "${#lines[@]}" = 1 ]
    assert_output --regexp "^redlock-run: lock 'notty' is held by [^ ]+ pid $HOLDER .*; gave up after waiting 1.500s\$"
    [ "$(grep -c $'[\r\e]' "$BATS_TEST_TMPDIR/err")" = 0 ]
}

@test "-q on a terminal shows no status line" {
    hold_until quiet "$GATE"
    # Everything the terminal shows from the typed line up to the exit status: no status line.
    run drive "expect:PROMPT" \
        "send:$RL -q -w 1.5 quiet -- true; echo rc=\$?\n" \
        "expect:\\A(?:(?!waiting for lock)[\\s\\S])*rc=75"
    assert_success
}

#!/usr/bin/env bats
# An interactive shell in a pseudo-terminal: the command gets the terminal, and job control works.
load helpers

setup() { redis_start; }
teardown() { redis_stop; }

drive() { /usr/bin/python3 "$BATS_TEST_DIRNAME/pty_drive.py" "$@"; }

@test "the command owns the terminal: it reads it, and ^C reaches it" {
    run drive "expect:PROMPT" \
        "send:$RL term-read -- sh -c 'read line; echo got:\$line'\n" \
        "send:hello\n" "expect:got:hello" "expect:PROMPT" \
        "send:$RL term-int -- sh -c 'echo run\"\"ning; exec sleep 30'; echo rc=\$?\n" \
        "expect:running" "send:\x03" "expect:rc=130"
    assert_success
    key_absent term-read
    key_absent term-int
}

@test "^Z suspends the run, fg resumes it with the terminal, and the lock is kept meanwhile" {
    run drive "expect:PROMPT" \
        "send:$RL term-stop -- sh -c 'echo run\"\"ning; read line; echo got:\$line'\n" \
        "expect:running" "send:\x1a" "expect:Stopped" "expect:PROMPT" \
        "send:redis-cli -p $REDIS_PORT EXISTS term-stop | sed s/^/exists=/\n" "expect:exists=1" \
        "send:fg\n" "send:resumed\n" "expect:got:resumed" "expect:PROMPT" \
        "send:echo rc=\$?\n" "expect:rc=0"
    assert_success
    key_absent term-stop
}

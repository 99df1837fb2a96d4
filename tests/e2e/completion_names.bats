#!/usr/bin/env bats
# Lock names for status, release and history: `list --names` and the bash, zsh and fish
# completions that call it with the connection options of the line being completed. About 3 s.
load helpers
load packaging_helpers
load hostile_helpers

setup() {
    need_build_tree
    # The completions run `redlock-run` as the line names it.
    PATH="$BUILD_DIR:$PATH"
    # They bound the lookup with `timeout 1`: a sanitized build on a loaded machine can take
    # longer than that just to start, so its runs get a `timeout` that allows 10 seconds. (The
    # test of a server that never answers still shows that the lookup gives up.)
    if sanitized; then
        mkdir -p "$BATS_TEST_TMPDIR/shim"
        printf '#!/bin/sh\nshift\nexec /usr/bin/timeout 10 "$@"\n' > "$BATS_TEST_TMPDIR/shim/timeout"
        chmod +x "$BATS_TEST_TMPDIR/shim/timeout"
        PATH="$BATS_TEST_TMPDIR/shim:$PATH"
    fi
    redis_start
    GATE="$BATS_TEST_TMPDIR/gate"
    # Names known to Redis: one held, two released (their fence counters stay), one under a
    # prefix, and a plain key that is no lock.
    hold_until held "$GATE"
    "$RL" free -- true
    "$RL" 'two words' -- true
    "$RL" --prefix jobs: nightly -- true
    cli "$REDIS_PORT" SET plain-key x > /dev/null
}

teardown() {
    touch "$GATE"
    [ -z "${HOLDER:-}" ] || wait "$HOLDER" 2>/dev/null || true
    fake_stop
    redis_stop
}

@test "list --names prints the locks ever taken, held or not, under the prefix and PATTERN" {
    # A name that cannot be one line is left out, and so is one that would drive the terminal
    # (a C1 control, as UTF-8 or as a raw byte) or is not UTF-8.
    cli "$REDIS_PORT" SET $'{bad\nname}:fence' 1 > /dev/null
    cli "$REDIS_PORT" SET $'{c1\xc2\x9bname}:fence' 1 > /dev/null
    cli "$REDIS_PORT" SET $'{raw\x9b[2Jname}:fence' 1 > /dev/null
    cli "$REDIS_PORT" SET $'{bad\xffutf8}:fence' 1 > /dev/null
    run "$RL" list --names
    assert_success
    assert_output "$(printf '%s\n' free held jobs:nightly 'two words')"
    run "$RL" list --names --prefix jobs:
    assert_output nightly
    run "$RL" list --names 'f*'
    assert_output free
    run "$RL" list --names --json
    assert_failure 64
    assert_output "redlock-run: give 'list' either --json or --names, not both"
    run "$RL" status --names held
    assert_failure 64
    run "$RL" --names held -- true
    assert_failure 64
    assert_output "redlock-run: option '--names' is for list, not for running a command"
}

@test "list --names stops at 1000 names" {
    for i in $(seq 1100); do echo "SET {n$i}:fence 1"; done | cli "$REDIS_PORT" > /dev/null
    run "$RL" list --names
    assert_success
    [ "${#lines[@]}" = 1000 ]
}

@test "bash offers the lock names after status, release and history, with -u from the line" {
    [ -f /usr/share/bash-completion/bash_completion ] || skip "bash-completion missing"
    local url=$REDIS_URL
    unset REDLOCK_URL
    run bash_complete "redlock-run status -u $url "
    assert_output "$(printf '%s\n' free held jobs:nightly 'two\ words')"
    run bash_complete "redlock-run --url=$url release --force h"
    assert_output held
    run bash_complete "redlock-run -u $url history --prefix jobs: "
    assert_output nightly
    # One NAME only; list takes a PATTERN, not a name; run's NAME is a new lock as often as not.
    run bash_complete "redlock-run -u $url status held "
    assert_output ''
    run bash_complete "redlock-run -u $url list "
    assert_output ''
    # Of a quorum's -u, the first is asked.
    run bash_complete "redlock-run -u $url -u redis://127.0.0.1:1 -u redis://127.0.0.1:2 status f"
    assert_output free
}

@test "bash, zsh and fish find Redis through the variables and a password file as a run does" {
    # (Connections already open, the holder's among them, stay logged in.)
    cli "$REDIS_PORT" CONFIG SET requirepass s3cret > /dev/null
    echo s3cret > "$BATS_TEST_TMPDIR/pw"
    chmod 600 "$BATS_TEST_TMPDIR/pw"
    export REDLOCK_PREFIX=jobs:
    run bash_complete "redlock-run status --password-file $BATS_TEST_TMPDIR/pw "
    assert_output nightly
    # Without the password there is nothing to offer, and nothing goes to the terminal.
    run bash_complete "redlock-run status "
    assert_output ''
    if command -v zsh > /dev/null; then
        run zsh_complete "redlock-run release --password-file $BATS_TEST_TMPDIR/pw --force "
        assert_output 'value nightly'
    fi
    if command -v fish > /dev/null; then
        run fish_complete "redlock-run history --password-file $BATS_TEST_TMPDIR/pw "
        assert_output nightly
    fi
}

@test "a name that begins with '-' is offered after a '--', never as an option" {
    cli "$REDIS_PORT" SET '{-dash}:fence' 1 > /dev/null
    # What each offers goes in as the NAME: after the "--", as status reads it.
    run "$RL" -u "$REDIS_URL" status -- -dash
    assert_failure 1
    assert_line 'name:     -dash'
    if [ -f /usr/share/bash-completion/bash_completion ]; then
        run bash_complete "redlock-run -u $REDIS_URL status "
        assert_line -- '-- -dash'
        refute_line -- '-dash'
        assert_line held
        run bash_complete "redlock-run -u $REDIS_URL status -- "
        assert_line -- '-dash'
        refute_line -- '-- -dash'
    fi
    if command -v zsh > /dev/null; then
        run zsh_complete "redlock-run -u $REDIS_URL release --force "
        assert_line -- 'value -- -dash'
        refute_line -- 'value -dash'
        assert_line 'value held'
        run zsh_complete "redlock-run -u $REDIS_URL release --force -- "
        assert_line -- 'value -dash'
    fi
    if command -v fish > /dev/null; then
        run fish_complete "redlock-run -u $REDIS_URL history "
        refute_line -- '-dash'
        assert_line held
        run fish_complete "redlock-run -u $REDIS_URL history -- "
        assert_line -- '-dash'
    fi
}

@test "zsh and fish offer the names too, and nothing after the NAME" {
    command -v zsh > /dev/null || skip "zsh missing"
    command -v fish > /dev/null || skip "fish missing"
    run zsh_complete "redlock-run -u $REDIS_URL status "
    assert_output "$(printf 'value %s\n' free held jobs:nightly 'two words')"
    run zsh_complete "redlock-run -u $REDIS_URL status held "
    assert_output 'message lock name'
    run fish_complete "redlock-run -u $REDIS_URL history "
    assert_output "$(printf '%s\n' free held jobs:nightly 'two words')"
    run fish_complete "redlock-run -u $REDIS_URL history held "
    assert_output ''
}

@test "a Redis that never answers, or refuses, gives no names and never hangs the shell" {
    [ -f /usr/share/bash-completion/bash_completion ] || skip "bash-completion missing"
    fake_start silent
    local start=$(now_ms)
    run bash_complete "redlock-run status -u redis://127.0.0.1:$FAKE_PORT "
    assert_output ''
    local silent_ms=$(($(now_ms) - start))
    run bash_complete "redlock-run status -u redis://127.0.0.1:$(free_port) "
    assert_output ''
    if command -v zsh > /dev/null; then
        run zsh_complete "redlock-run status -u redis://127.0.0.1:$FAKE_PORT "
        assert_output 'message lock name'
    fi
    if command -v fish > /dev/null; then
        run fish_complete "redlock-run status -u redis://127.0.0.1:$FAKE_PORT "
        assert_output ''
    fi
    # The completion bounds the command (300ms, 1s in all), so a silent server cannot hang the
    # shell. Only a hang is checked here: a clean-clone CI run under load took over 3s, and
    # speed belongs in bench/. The figure is printed.
    echo "# silent server: no names after ${silent_ms}ms" >&3
    [ "$silent_ms" -lt 20000 ]
}

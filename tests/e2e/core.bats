#!/usr/bin/env bats
# The core run: mutual exclusion, exit statuses, the busy code, the command's environment, and
# the lock released in every way the command can end.
load helpers
bats_require_minimum_version 1.5.0

setup() { redis_start; }
teardown() {
    rl_cleanup
    redis_stop
}

@test "20 concurrent contenders: exactly one runs the command, the others exit 75" {
    local d=$BATS_TEST_TMPDIR i pids=()
    for i in $(seq 1 20); do
        (
            rc=0
            "$RL" -t 5s race -- sh -c 'echo "$$" >> "$0/ran"; while [ ! -e "$0/go" ]; do sleep 0.02; done' "$d" \
                2>>"$d/err" || rc=$?
            echo "$rc" > "$d/rc.$i"
        ) &
        pids+=($!)
    done
    # The winner holds the lock until every loser has given up.
    count_rc() { [ "$(ls "$d" | grep -c '^rc\.')" -ge "$1" ]; }
    wait_for 30 count_rc 19
    touch "$d/go"
    wait_for 10 count_rc 20
    wait "${pids[@]}"
    [ "$(wc -l < "$d/ran")" -eq 1 ]
    [ "$(cat "$d"/rc.* | grep -c '^75$')" -eq 19 ]
    [ "$(cat "$d"/rc.* | grep -c '^0$')" -eq 1 ]
    # Holder info is recorded by default: every loser names the winner.
    [ "$(grep -c "held by $(hostname) pid [0-9]* (user $(id -un))" "$d/err")" -eq 19 ]
    key_absent race
}

@test "the command's exit status is passed through" {
    run "$RL" passthrough -- sh -c 'exit 3'
    assert_equal "$status" 3
    run "$RL" passthrough -- false
    assert_equal "$status" 1
    run "$RL" passthrough -- true
    assert_success
    key_absent passthrough
}

@test "a command killed by signal N makes redlock-run exit 128+N and releases the lock" {
    run "$RL" sig -- sh -c 'kill -KILL $$'
    assert_equal "$status" 137
    run "$RL" sig -- sh -c 'kill -USR1 $$'
    assert_equal "$status" 138
    key_absent sig
}

@test "a busy lock exits 75 without running the command and says how long it is held" {
    cli "$REDIS_PORT" SET busy someone-else PX 20000 >/dev/null
    run "$RL" busy -- touch "$BATS_TEST_TMPDIR/ran"
    assert_equal "$status" 75
    assert_output --regexp "^redlock-run: lock 'busy' is held by an unknown holder, expires in [0-9]"
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
    assert_equal "$(cli "$REDIS_PORT" GET busy)" someone-else
}

@test "-E changes the busy exit code" {
    cli "$REDIS_PORT" SET busy someone-else PX 20000 >/dev/null
    run "$RL" -E 9 busy -- true
    assert_equal "$status" 9
    REDLOCK_CONFLICT_EXIT_CODE=12 run "$RL" busy -- true
    assert_equal "$status" 12
}

@test "-E 0 -q is a silent skip when the lock is busy" {
    cli "$REDIS_PORT" SET busy someone-else PX 20000 >/dev/null
    run "$RL" -E 0 -q busy -- touch "$BATS_TEST_TMPDIR/ran"
    assert_success
    assert_output ''
    [ ! -e "$BATS_TEST_TMPDIR/ran" ]
}

@test "REDLOCK_QUIET says yes or no in words, and -q on the command line wins over it" {
    cli "$REDIS_PORT" SET busy someone-else PX 20000 >/dev/null
    REDLOCK_QUIET=Yes run -75 "$RL" busy -- true
    assert_output ''
    REDLOCK_QUIET=off run -75 "$RL" busy -- true
    assert_output --partial "lock 'busy' is held"
    REDLOCK_QUIET=off run -75 "$RL" -q busy -- true
    assert_output ''
    REDLOCK_QUIET= run -75 "$RL" busy -- true  # empty: as if unset
    assert_output --partial "lock 'busy' is held"
}

@test "a command that cannot be forked (process limit) exits 71, releases the lock and records why" {
    # An unused uid, so that no other process counts against its limit of 2: redlock-run and its
    # watchdog, and the command's vfork is refused (RLIMIT_NPROC is not applied to root). One of
    # this suite's own (a second suite at once would otherwise share the count). No
    # LeakSanitizer: its check at exit needs a task of its own.
    local uid=$((61000 + $$ % 1000))
    run -71 --separate-stderr prlimit --nproc=2 setpriv --reuid=$uid --regid=$uid --clear-groups \
        env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$RL" nproc -- true
    [[ "$stderr" == *"redlock-run: true: cannot start the command: fork: Resource temporarily unavailable"* ]]
    assert_equal "$(cli "$REDIS_PORT" EXISTS '{nproc}:fence')" 1
    key_absent nproc
    run -0 "$RL" history --json nproc
    echo "$output" | jq -e '.outcome == "failed-to-start"'
}

@test "no thread for the renewals (process limit) stops the command before its lease ends and releases" {
    # As above with a limit of 3: redlock-run, its watchdog and the command. The renewal thread,
    # started when the first renewal is due, is refused; the lease is then never extended, and
    # the run stops the command before it ends, as when renewals fail.
    local uid=$((61000 + $$ % 1000))
    run -76 --separate-stderr prlimit --nproc=3 setpriv --reuid=$uid --regid=$uid --clear-groups \
        env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$RL" -t 1s nproc -- sleep 30
    [[ "$stderr" == *"cannot start the renewal thread for lock 'nproc'"* ]]
    key_absent nproc
    run -0 "$RL" history --json nproc
    echo "$output" | jq -e '.outcome == "lost"'
}

@test "a missing command exits 127 and the lock is released" {
    run -127 "$RL" nocmd -- redlock-test-no-such-command
    assert_output --partial 'redlock-test-no-such-command'
    # The lock was taken (the fence counter exists) and then released.
    assert_equal "$(cli "$REDIS_PORT" EXISTS '{nocmd}:fence')" 1
    key_absent nocmd
}

@test "a file that is not executable exits 126 and the lock is released" {
    printf '#!/bin/sh\nexit 0\n' > "$BATS_TEST_TMPDIR/script"
    chmod 644 "$BATS_TEST_TMPDIR/script"
    run -126 "$RL" noexec -- "$BATS_TEST_TMPDIR/script"
    assert_equal "$(cli "$REDIS_PORT" EXISTS '{noexec}:fence')" 1
    key_absent noexec
}

@test "an executable script without #! runs with /bin/sh, as execvp does" {
    printf 'echo "ran with $# args: $1"\nexit 6\n' > "$BATS_TEST_TMPDIR/bare"
    chmod 755 "$BATS_TEST_TMPDIR/bare"
    PATH="$BATS_TEST_TMPDIR:$PATH" run -6 "$RL" bare -- bare one
    assert_output "ran with 1 args: one"
    key_absent bare
}

@test "the command sees REDLOCK_NAME, KEY, TOKEN (the key's value), FENCE and TTL_MS" {
    local show='echo "name=$REDLOCK_NAME key=$REDLOCK_KEY token=$REDLOCK_TOKEN fence=$REDLOCK_FENCE ttl=$REDLOCK_TTL_MS"
                echo "value=$(redis-cli -p "$REDIS_PORT" GET "$REDLOCK_KEY")"'
    run "$RL" --prefix app: -t 7s envjob -- sh -c "$show"
    assert_success
    assert_line --regexp '^name=envjob key=app:envjob token=[0-9a-f]{32} fence=[0-9]+ ttl=7000$'
    local token fence1 fence2
    token=$(sed -n 's/.*token=\([0-9a-f]*\).*/\1/p' <<<"$output")
    assert_line "value=$token"
    fence1=$(sed -n 's/.*fence=\([0-9]*\).*/\1/p' <<<"$output")

    REDLOCK_PREFIX=app: run "$RL" envjob -- sh -c "$show"
    assert_success
    fence2=$(sed -n 's/.*fence=\([0-9]*\).*/\1/p' <<<"$output")
    # Fences grow with every acquisition (by one at least: never below Redis's clock in us).
    [ "$fence2" -gt "$fence1" ]
    refute_line "value=$token"  # a fresh token every run
    key_absent app:envjob
    assert_equal "$(cli "$REDIS_PORT" GET '{app:envjob}:fence')" "$fence2"
}

@test "the key holds the plain token, so a SET NX client is excluded while the command runs" {
    run "$RL" plain -- sh -c '
        [ "$(redis-cli -p "$REDIS_PORT" GET plain)" = "$REDLOCK_TOKEN" ] || exit 10
        [ -z "$(redis-cli -p "$REDIS_PORT" SET plain intruder NX PX 5000)" ] || exit 11
        ttl=$(redis-cli -p "$REDIS_PORT" PTTL plain)
        [ "$ttl" -gt 0 ] && [ "$ttl" -le 30000 ] || exit 12'
    assert_success
    key_absent plain
}

@test "-c runs a shell command, given before or after NAME" {
    run "$RL" -c 'echo "a|$REDLOCK_NAME" | tr "|" -' shelljob
    assert_success
    assert_output 'a-shelljob'
    run "$RL" shelljob -c 'exit 4'
    assert_equal "$status" 4
}

@test "options after NAME belong to the command" {
    run "$RL" optjob echo --ttl 5 -v
    assert_success
    assert_output -- '--ttl 5 -v'
}

@test "-v reports acquire, renew and release" {
    # Renewals every 100ms; the 3s lease only keeps a late one on a loaded machine from losing it.
    run "$RL" -v -t 3s --renew-every 100ms verbose -- sleep 0.35
    assert_success
    assert_line --regexp "^redlock-run: acquired lock 'verbose' on 127.0.0.1:$REDIS_PORT \(fence [0-9]+\) in "
    assert_line --regexp "^redlock-run: renewed lock 'verbose' in "
    assert_line --regexp "^redlock-run: released lock 'verbose' in "
}

@test "without -v a successful run prints nothing of its own" {
    run "$RL" quietjob -- true
    assert_success
    assert_output ''
}

@test "the lock is renewed past its ttl while the command runs" {
    # A lease of 1.5s renewed every 150ms, held for 2s: short enough to outlive, long enough
    # that a machine busy with a sanitizer pass still gets a renewal through in time.
    run "$RL" -t 1500ms --renew-every 150ms long -- sh -c '
        sleep 2; [ "$(redis-cli -p "$REDIS_PORT" GET long)" = "$REDLOCK_TOKEN" ]'
    assert_success
    key_absent long
}

@test "--version and --help exit 0" {
    run "$RL" --version
    assert_success
    assert_output --regexp '^redlock-run [0-9]+\.[0-9]+'
    run "$RL" --help
    assert_success
    assert_output --partial 'NAME'
}

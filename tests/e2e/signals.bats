#!/usr/bin/env bats
# Signals: forwarded to the command's whole process group, the command's mask left clean, and
# what a killed redlock-run or a frozen Redis leaves behind.
load helpers

setup() { redis_start; }
teardown() {
    rl_cleanup "$BATS_TEST_TMPDIR/cpid"
    # A fifo observer whose command never started is still blocked opening the fifo: a writer
    # that comes and goes sets it free (it would otherwise linger until its timeout).
    local fd
    if [ -p "$BATS_TEST_TMPDIR/alive" ]; then exec {fd}<>"$BATS_TEST_TMPDIR/alive"; exec {fd}>&-; fi
    redis_stop  # also resumes a SIGSTOPped redis-server
}

# pttl_at_most KEY MS: KEY exists with an expiry of at most MS left.
pttl_at_most() {
    local pttl
    pttl=$(cli "$REDIS_PORT" PTTL "$1")
    [ "$pttl" -ge 0 ] && [ "$pttl" -le "$2" ]
}

# A command whose pid (= its process group) is in cpid, that says "ready" and then sleeps in a
# pipeline whose first member records its own pid in gpid.
pipeline_command() {
    local d=$BATS_TEST_TMPDIR
    echo "echo \$\$ > '$d/cpid'; sh -c 'echo \$\$ > \"$d/gpid\"; exec sleep 30' | cat; echo survived > '$d/survived'"
}

forwarded_signal_ends_the_group() {
    local sig=$1 num=$2 d=$BATS_TEST_TMPDIR
    rl_start "fwd$sig" -- sh -c "$(pipeline_command)"
    wait_for 5 file_exists "$d/gpid"
    kill "-$sig" "$RL_PID"
    rl_finish 5
    assert_equal "$RL_STATUS" "$((128 + num))"
    wait_for 2 pid_gone "$(cat "$d/gpid")"
    [ ! -e "$d/survived" ]
    key_absent "fwd$sig"
}

@test "a forwarded SIGTERM reaches the command's grandchildren and exits 143" {
    forwarded_signal_ends_the_group TERM 15
}

@test "a forwarded SIGINT reaches the command's grandchildren and exits 130" {
    forwarded_signal_ends_the_group INT 2
}

@test "a forwarded SIGHUP reaches the command's grandchildren and exits 129" {
    forwarded_signal_ends_the_group HUP 1
}

@test "a forwarded SIGUSR1 reaches the command's grandchildren and exits 138" {
    forwarded_signal_ends_the_group USR1 10
}

@test "a forwarded SIGQUIT reaches the command's grandchildren and exits 131" {
    forwarded_signal_ends_the_group QUIT 3
}

@test "a SIGHUP ignored when redlock-run starts stays ignored for the command (nohup)" {
    local d=$BATS_TEST_TMPDIR
    env --ignore-signal=HUP "$RL" nohup -- sh -c "
        grep '^SigIgn' /proc/self/status > '$d/sigign'
        trap 'touch \"$d/winch\"' WINCH
        touch '$d/ready'
        while [ ! -e '$d/go' ]; do sleep 0.02; done
        echo survived > '$d/survived'" >"$d/out" 2>"$d/err" &
    RL_PID=$!
    wait_for 5 file_exists "$d/ready"
    # SIGHUP is signal 1: the lowest bit of the command's ignored set.
    [ $((0x$(awk '{print $2}' "$d/sigign") & 1)) = 1 ]
    # Pending standard signals are taken lowest number first and passed on in that order, so
    # once the command has seen the SIGWINCH, whatever redlock-run did with the SIGHUP is done.
    kill -HUP "$RL_PID"
    kill -WINCH "$RL_PID"
    wait_for 5 file_exists "$d/winch"
    touch "$d/go"
    rl_finish 10
    assert_equal "$RL_STATUS" 0
    [ -e "$d/survived" ]
    key_absent nohup
}

@test "SIGWINCH and SIGUSR2 are passed on without ending the command" {
    local d=$BATS_TEST_TMPDIR
    rl_start winch -- bash -c "
        trap 'echo winch >> \"$d/got\"' WINCH
        trap 'echo usr2 >> \"$d/got\"' USR2
        touch '$d/ready'
        while [ ! -e '$d/go' ]; do sleep 0.02; done"
    wait_for 5 file_exists "$d/ready"
    kill -WINCH "$RL_PID"
    wait_for 5 file_contains "$d/got" winch
    kill -USR2 "$RL_PID"
    wait_for 5 file_contains "$d/got" usr2
    touch "$d/go"
    rl_finish 5
    assert_equal "$RL_STATUS" 0
}

@test "a command that handles a forwarded signal decides the exit status itself" {
    local d=$BATS_TEST_TMPDIR
    rl_start handled -- sh -c "trap 'echo usr2 > \"$d/got\"; exit 5' USR2; touch '$d/ready'; while :; do sleep 0.02; done"
    wait_for 5 file_exists "$d/ready"
    kill -USR2 "$RL_PID"
    rl_finish 5
    assert_equal "$RL_STATUS" 5
    assert_equal "$(cat "$d/got")" usr2
    key_absent handled
}

@test "the command starts with an empty signal mask and in its own process group" {
    # grep reads its own mask (inherited through the shell's exec), not the shell's: a shell blocks
    # every signal around its own fork, so reading its status then sees a transient full mask.
    run "$RL" mask -- sh -c 'grep "^SigBlk:" /proc/self/status; echo "pgid=$(cut -d" " -f5 /proc/$$/stat) pid=$$"'
    assert_success
    assert_line "$(printf 'SigBlk:\t0000000000000000')"
    local pgid pid
    pgid=$(sed -n 's/^pgid=\([0-9]*\) .*/\1/p' <<<"$output")
    pid=$(sed -n 's/.* pid=\([0-9]*\)$/\1/p' <<<"$output")
    assert_equal "$pgid" "$pid"
}

@test "a SIGKILLed redlock-run leaves a key that expires within the ttl" {
    local d=$BATS_TEST_TMPDIR
    # 3s: with 1s, an ASan pass on a loaded CI machine saw no renewal in time, and the run had
    # stopped and released before the test looked for its key.
    rl_start -t 3s killed -- sh -c "echo \$\$ > '$d/cpid'; exec sleep 30"
    wait_for 5 file_exists "$d/cpid"
    wait_for 5 key_exists killed
    kill -KILL "$RL_PID"
    rl_finish 2
    local pttl
    pttl=$(cli "$REDIS_PORT" PTTL killed)
    # Either still counting down within the ttl, or already gone (-2); never without expiry (-1).
    [ "$pttl" -le 3000 ] && [ "$pttl" != -1 ]
    wait_for 4 key_absent killed
}

@test "a command that ignores SIGTERM is SIGKILLed by the lease end when Redis is frozen" {
    local d=$BATS_TEST_TMPDIR
    mkfifo "$d/alive"
    # The observer is outside the command's group: its read returns when the last process
    # holding the fifo's write end (the command's whole group) is dead. It closes bats's fd 3 and
    # has a timeout, so that a command that never started cannot keep the file's run alive.
    (timeout 60 cat "$d/alive" >/dev/null && echo "${EPOCHREALTIME/[.,]/}" > "$d/died") 3>&- &
    # --renew-every 1s (the most a 2s ttl allows): PTTL then goes down to 1000 between renewals,
    # so the freeze below can wait for a moment well after the last one.
    rl_start -t 2s --renew-every 1s --command-timeout 300ms --kill-after 10s stubborn -- \
        bash -c "trap '' TERM; exec 3>'$d/alive'; echo \$\$ > '$d/cpid'; sleep 30 & wait"
    wait_for 5 file_exists "$d/cpid"
    wait_for 5 key_exists stubborn
    # Freeze at least half a second after the last extension (a renewal every 1s resets PTTL to
    # 2000): the run's SIGKILL, at its local lease end (50ms before Redis's), then comes that much
    # before the bound below, room for the observer's lateness in noting the death.
    wait_for 5 pttl_at_most stubborn 1500
    kill -STOP "$REDIS_PID"
    # Taken after the freeze: every extension Redis made came before it, so the key expires at
    # most 2s (the ttl) after this moment; --kill-after 10s must not delay the SIGKILL past that.
    local lease_bound=$(($(now_ms) + 2000))
    wait_for 4 file_exists "$d/died"
    local died=$(($(cat "$d/died") / 1000))
    echo "# command group dead $((lease_bound - died))ms before Redis's lease could end" >&3
    [ "$died" -lt "$lease_bound" ]
    kill -CONT "$REDIS_PID"
    rl_finish 5
    assert_equal "$RL_STATUS" 76
    run cat "$RL_ERR"
    assert_output --partial "still running after SIGTERM; sending SIGKILL"
}

@test "a Redis frozen longer than the ttl makes the holder stop its command before the ttl ends" {
    local d=$BATS_TEST_TMPDIR
    # bash, so that the trap notes the time with builtins only: no fork between signal and note.
    # 3s: with 1s, a TSan pass on a loaded machine (ciAH) had the lease end before the command
    # had even written its pid.
    rl_start -t 3s --renew-every 300ms --command-timeout 300ms frozen -- bash -c "
        echo \$\$ > '$d/cpid'
        trap 'echo \${EPOCHREALTIME/[.,]/} > \"$d/termed\"; exit 0' TERM
        sleep 30 & wait"
    wait_for 5 file_exists "$d/cpid"
    wait_for 5 key_exists frozen
    kill -STOP "$REDIS_PID"
    # Taken after the freeze: the last renewal Redis made came before it, so the key expires at
    # most 3s (the ttl) after this moment. (Taken before the freeze, a renewal landing in
    # between would push the lease past the bound.) The SIGTERM comes well before the lease end.
    local lease_bound=$(($(now_ms) + 3000))
    wait_for 6 file_exists "$d/termed"
    local termed=$(($(cat "$d/termed") / 1000))
    echo "# command terminated $((lease_bound - termed))ms before Redis's lease could end" >&3
    [ "$termed" -lt "$lease_bound" ]
    kill -CONT "$REDIS_PID"
    rl_finish 5
    assert_equal "$RL_STATUS" 76
    run cat "$RL_ERR"
    assert_output --regexp "^redlock-run: lock 'frozen' lost: no renewal succeeded"
}

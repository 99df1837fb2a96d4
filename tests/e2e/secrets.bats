#!/usr/bin/env bats
# The password stays secret: not in ps (command line or environment), not in any message, not in
# the command's environment unless --keep-env; and where it comes from, in which order.
load helpers
bats_require_minimum_version 1.5.0

PW=Zq7-s3cret-pw

setup() {
    T=$BATS_TEST_TMPDIR
    CLI_OPTS="-a $PW --no-auth-warning" redis_start --requirepass "$PW"
    CLI_OPTS="-a $PW --no-auth-warning"  # not exported: the tool's environment must not have it
}

teardown() {
    redis_stop
    [ -z "${LISTENER:-}" ] || kill "$LISTENER" 2>/dev/null || true
}

# What the command writes: redlock-run's command line and environment as ps reads them
# (/proc/PPID), and the command's own.
SNOOP='cat /proc/$PPID/cmdline > "$0/rl.cmdline"; cat /proc/$PPID/environ > "$0/rl.environ"
       cat /proc/self/environ > "$0/child.environ"; env > "$0/child.env"'

# refute_file_has FILE TEXT: FILE exists and does not contain TEXT.
refute_file_has() {
    [ -e "$1" ] || { echo "$1 missing" >&2; return 1; }
    if grep -aqF -- "$2" "$1"; then
        echo "$1 contains '$2':" >&2
        tr '\0' '\n' < "$1" >&2
        return 1
    fi
}

no_password_visible() {
    local f
    for f in rl.cmdline rl.environ child.environ child.env; do refute_file_has "$T/$f" "$PW"; done
}

@test "REDLOCK_PASSWORD supplies the password and beats REDISCLI_AUTH" {
    REDLOCK_PASSWORD=$PW run "$RL" job -- true
    assert_success
    assert_output ''
    REDLOCK_PASSWORD=$PW REDISCLI_AUTH=wrong run "$RL" job -- true
    assert_success
    REDLOCK_PASSWORD=wrong REDISCLI_AUTH=$PW run -77 "$RL" job -- true
    refute_output --partial wrong
}

@test "a refused password names where it came from: an inherited REDISCLI_AUTH, the URL, a file" {
    REDISCLI_AUTH=stale run -77 "$RL" job -- true
    assert_output --partial 'refused authentication: WRONGPASS'
    assert_output --partial '(the password came from REDISCLI_AUTH in the environment)'
    refute_output --partial stale
    REDLOCK_URL="redis://:stale@127.0.0.1:$REDIS_PORT" run -77 "$RL" status job
    assert_output --partial '(the password came from the URL)'
    printf 'stale\n' > "$T/pw"
    chmod 600 "$T/pw"
    REDLOCK_PASSWORD_FILE=$T/pw run -77 "$RL" job -- true
    assert_output --partial "(the password came from REDLOCK_PASSWORD_FILE '$T/pw')"
}

@test "the URL's password beats REDLOCK_PASSWORD, and --password-file beats both" {
    REDLOCK_URL="redis://:$PW@127.0.0.1:$REDIS_PORT" REDLOCK_PASSWORD=wrong run "$RL" job -- true
    assert_success
    printf '%s\n' "$PW" > "$T/pw"
    chmod 600 "$T/pw"
    REDLOCK_URL="redis://:wrong@127.0.0.1:$REDIS_PORT" REDLOCK_PASSWORD=wrong \
        run "$RL" --password-file "$T/pw" job -- true
    assert_success
    assert_output ''
}

@test "a password file every user may read works but warns; mode 600 and 640 do not" {
    printf '%s\n' "$PW" > "$T/pw"
    chmod 644 "$T/pw"
    run --separate-stderr "$RL" --password-file "$T/pw" job -- echo ran
    assert_success
    assert_output ran
    assert_equal "$stderr" "redlock-run: the password file '$T/pw' is readable by every user (mode 0644); chmod o-r it"
    [[ "$stderr" != *"$PW"* ]]
    local mode
    for mode in 600 640 400; do
        chmod "$mode" "$T/pw"
        run --separate-stderr "$RL" --password-file "$T/pw" job -- echo ran
        assert_success
        assert_equal "$stderr" ''
    done
}

@test "an unreadable, empty or endless password file is a one-line usage error" {
    run -64 "$RL" --password-file "$T/none" job -- touch "$T/ran"
    assert_output --regexp "^redlock-run: cannot read the password file '$T/none': No such file or directory$"
    : > "$T/empty"
    chmod 600 "$T/empty"
    run -64 "$RL" --password-file "$T/empty" job -- touch "$T/ran"
    assert_output "redlock-run: the password file '$T/empty' is empty"
    run -64 "$RL" --password-file "$T" job -- touch "$T/ran"
    assert_output --regexp "^redlock-run: the password file '$T' is a directory$"
    run -64 "$RL" --password-file /dev/zero job -- touch "$T/ran"
    assert_output "redlock-run: the password file '/dev/zero' is not a regular file (a device)"
    [ ! -e "$T/ran" ]
    key_absent job
}

@test "a password from REDISCLI_AUTH is in neither ps output nor the command's environment" {
    REDISCLI_AUTH=$PW run "$RL" job -- sh -c "$SNOOP" "$T"
    assert_success
    no_password_visible
    refute_file_has "$T/child.env" REDISCLI_AUTH
    refute_file_has "$T/child.env" REDLOCK_URL
}

@test "a password from REDLOCK_PASSWORD is in neither ps output nor the command's environment" {
    REDLOCK_PASSWORD=$PW run "$RL" job -- sh -c "$SNOOP" "$T"
    assert_success
    no_password_visible
    refute_file_has "$T/child.env" REDLOCK_PASSWORD
}

@test "REDLOCK_PASSWORD given twice in the environment: both copies are scrubbed" {
    # Only execve can pass a name twice; the first entry is the one getenv sees.
    run /usr/bin/python3 -c '
import ctypes, os, sys
rl, snoop, t, pw = sys.argv[1:5]
args = [rl, "job", "--", "sh", "-c", snoop, t]
env = ["REDLOCK_PASSWORD=" + pw, "REDLOCK_PASSWORD=" + pw + "-second",
       "PATH=" + os.environ["PATH"], "REDLOCK_URL=" + os.environ["REDLOCK_URL"],
       "REDLOCK_RESTART_GUARD=0"]
def array(items):
    return (ctypes.c_char_p * (len(items) + 1))(*[i.encode() for i in items], None)
ctypes.CDLL(None).execve(rl.encode(), array(args), array(env))
sys.exit("execve failed")' "$RL" "$SNOOP" "$T" "$PW"
    assert_success
    no_password_visible
}

@test "a password from --password-file is in neither ps output nor the command's environment" {
    printf '%s\n' "$PW" > "$T/pw"
    chmod 600 "$T/pw"
    REDLOCK_PASSWORD_FILE=$T/pw run "$RL" job -- sh -c "$SNOOP" "$T"
    assert_success
    no_password_visible
    refute_file_has "$T/child.env" REDLOCK_PASSWORD_FILE
    run "$RL" --password-file "$T/pw" job -- sh -c "$SNOOP" "$T"
    assert_success
    no_password_visible
}

@test "a password in REDLOCK_URL is in neither ps output nor the command's environment" {
    REDLOCK_URL="redis://:$PW@127.0.0.1:$REDIS_PORT" run "$RL" job -- sh -c "$SNOOP" "$T"
    assert_success
    no_password_visible
}

@test "the command still gets the other variables, and the lock's own" {
    REDISCLI_AUTH=$PW UNRELATED=kept run "$RL" job -- sh -c 'echo "$UNRELATED $REDLOCK_NAME ${REDLOCK_URL-unset}"'
    assert_success
    assert_output 'kept job unset'
}

@test "--keep-env and REDLOCK_KEEP_ENV pass the password variables on to the command" {
    REDISCLI_AUTH=$PW REDLOCK_PASSWORD=$PW run "$RL" --keep-env job -- \
        sh -c 'echo "$REDISCLI_AUTH $REDLOCK_PASSWORD $REDLOCK_URL"'
    assert_success
    assert_output "$PW $PW $REDIS_URL"
    REDLOCK_KEEP_ENV=1 REDISCLI_AUTH=$PW run "$RL" job -- sh -c 'echo "$REDISCLI_AUTH"'
    assert_success
    assert_output "$PW"
}

@test "a nested run that replaces itself with its command drops the password variables too" {
    REDISCLI_AUTH=$PW run "$RL" --keep-env deploy -- sh -c '
        "$0" deploy -- sh -c "echo \"nested:\${REDISCLI_AUTH-unset}:\${REDLOCK_URL-unset}\""' "$RL"
    assert_success
    assert_output 'nested:unset:unset'
}

@test "no message shows the password: -v, --syslog, warnings and errors" {
    export REDLOCK_SYSLOG_SOCKET="$T/log"
    /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
out = open(sys.argv[2], "a", buffering=1)
while True:
    out.write(s.recv(65536).decode(errors="replace") + "\n")' "$REDLOCK_SYSLOG_SOCKET" "$T/syslog" &
    LISTENER=$!
    wait_for 5 test -S "$REDLOCK_SYSLOG_SOCKET"
    printf '%s\n' "$PW" > "$T/pw"
    chmod 644 "$T/pw"  # for the warning
    {
        REDISCLI_AUTH=$PW "$RL" -v --syslog job -- true
        REDLOCK_PASSWORD=$PW "$RL" -v --syslog --ttl 1s job -- sleep 0.8
        "$RL" -v --syslog --password-file "$T/pw" job -- true
        "$RL" -v --syslog -u "redis://:$PW@127.0.0.1:$REDIS_PORT" job -- true
        "$RL" -v --syslog -u "redis://:$PW@127.0.0.1:$REDIS_PORT/99999" job -- true
        "$RL" -v --syslog -u "redis://user:$PW@127.0.0.1:$REDIS_PORT" job -- true
        REDISCLI_AUTH=$PW "$RL" -v --syslog -u "redis://127.0.0.1:$(free_port)" --connect-timeout 300ms job -- true
        REDISCLI_AUTH=$PW "$RL" -v --syslog status job
    } > "$T/out" 2>&1 || true
    wait_for 5 file_contains "$T/syslog" 'renewed lock'
    grep -q 'readable by every user' "$T/out"
    grep -q 'released lock' "$T/out"
    grep -q 'WRONGPASS' "$T/out"
    grep -q 'is visible to other users in ps' "$T/out"
    refute_file_has "$T/out" "$PW"
    refute_file_has "$T/syslog" "$PW"
}

@test "every invalid URL is quoted with its password masked" {
    local url
    for url in "redis://u:$PW@host:99999" "redis:/u:$PW@host" "http://u:$PW@host" \
        "redis://u:$PW@[::1" "redis://u:$PW%zz@host" "redis://:$PW@" "redis://u:$PW@host/x" \
        "redis//u:$PW@host"; do
        run -64 "$RL" -u "$url" job -- true
        assert_output --regexp '^redlock-run: invalid Redis URL .*\*\*\*'
        refute_output --partial "$PW"
        REDLOCK_URL=$url run -64 "$RL" job -- true
        refute_output --partial "$PW"
    done
}

@test "--help-all documents --keep-env and the password variables" {
    run "$RL" --help-all
    assert_success
    assert_output --partial --keep-env
    assert_output --partial REDLOCK_PASSWORD
}

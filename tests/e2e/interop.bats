#!/usr/bin/env bats
# Interoperability with lock clients nobody here wrote: redis-py's Lock (Debian's python3-redis)
# and node-redlock 4.2.0 (npm's redlock, with ioredis, installed into the build tree once) on the
# same key. Both use a plain token string set with SET NX PX and delete it only when it
# still holds their token, so each must keep the other out and neither may release the other's.
load helpers
export RL

# Debian's interpreter, which has python3-redis; the python3 on PATH may be another one.
PY=/usr/bin/python3

setup() { redis_start; }

teardown() {
    stop_holder
    redis_stop
}

# py 'CODE': runs CODE with `r` connected to the test server and `redis` imported.
py() {
    "$PY" -c "import redis, sys, time, subprocess, os
r = redis.Redis(port=$REDIS_PORT)
$1"
}

@test "a redis-py Lock keeps redlock-run out, and status shows it held by an unknown holder" {
    run py 'l = r.lock("shared", timeout=60); print(l.acquire(blocking=False))'
    assert_output True
    run "$RL" shared -- echo ran
    assert_failure 75
    refute_output --partial ran
    run "$RL" status shared --json
    assert_success
    echo "$output" | jq -e --arg token "$(cli "$REDIS_PORT" GET shared)" \
        '.held == true and .holder == null and .token == $token'
    run "$RL" status shared
    assert_line --regexp '^holder: +unknown'
}

@test "a lock held by redlock-run keeps a redis-py Lock out until redlock-run releases it" {
    hold shared
    run py 'l = r.lock("shared", timeout=10)
print(l.acquire(blocking=False), l.acquire(blocking=True, blocking_timeout=0.3))'
    assert_output "False False"
    touch "$BATS_TEST_TMPDIR/stop"
    wait "$HOLDER_PID"
    HOLDER_PID=
    run py 'l = r.lock("shared", timeout=10)
print(l.acquire(blocking=False)); l.release(); print(r.exists("shared"))'
    assert_output $'True\n0'
}

@test "redlock-run release --token refuses a redis-py lock's key unless given its token" {
    run py 'l = r.lock("shared", timeout=60); l.acquire(blocking=False); print(l.local.token.decode())'
    local py_token=$output
    run "$RL" release shared --token 0123456789abcdef0123456789abcdef
    assert_failure 1
    assert_output --partial "held by an unknown holder"
    assert_equal "$(cli "$REDIS_PORT" GET shared)" "$py_token"
    # The right token releases it: both sides store the same plain token string.
    run "$RL" release shared --token "$py_token"
    assert_success
    key_absent shared
}

@test "redis-py cannot release a lock that redlock-run took after redis-py's expired" {
    # One Python process: its Lock object must outlive the expiry and redlock-run's acquisition.
    run py '
l = r.lock("shared", timeout=0.3)
assert l.acquire(blocking=False)
deadline = time.time() + 5
while r.exists("shared") and time.time() < deadline: time.sleep(0.02)
tmp = os.environ["BATS_TEST_TMPDIR"]
p = subprocess.Popen([os.environ["RL"], "shared", "--", "sh", "-c",
                      "touch \"$0/started\"; while [ ! -e \"$0/stop\" ]; do sleep 0.05; done", tmp])
while not os.path.exists(tmp + "/started") and time.time() < deadline: time.sleep(0.02)
ours = r.get("shared")
try:
    l.release()
    print("released")
except redis.exceptions.LockNotOwnedError:
    print("LockNotOwnedError")
print("unchanged" if r.get("shared") == ours else "changed")
open(tmp + "/stop", "w").close()
print("exit", p.wait(10))
print("exists", r.exists("shared"))'
    assert_success
    assert_output $'LockNotOwnedError\nunchanged\nexit 0\nexists 0'
}

# ---- node-redlock ----

# node-redlock and ioredis, pinned, in a cache under the build tree (or REDLOCK_NODE_CACHE); skips
# the test when node or npm is missing or the npm registry cannot be reached.
need_node_redlock() {
    command -v node >/dev/null && command -v npm >/dev/null || skip "node or npm is not installed"
    NODE_CACHE=${REDLOCK_NODE_CACHE:-$(dirname "$RL")/interop-node}
    if [ ! -f "$NODE_CACHE/node_modules/redlock/package.json" ]; then
        mkdir -p "$NODE_CACHE"
        timeout 180 npm install --no-save --no-audit --no-fund --prefix "$NODE_CACHE" \
            redlock@4.2.0 ioredis@4.28.5 >"$BATS_TEST_TMPDIR/npm.log" 2>&1 ||
            skip "npm could not install redlock@4.2.0 and ioredis@4.28.5 (registry unreachable?): $(tail -1 "$BATS_TEST_TMPDIR/npm.log")"
    fi
}

# nodelock 'CODE': runs CODE in node with `redlock` (retryCount 0: one attempt) on the test server.
nodelock() {
    NODE_PATH="$NODE_CACHE/node_modules" node -e "
const Redis = require('ioredis'), Redlock = require('redlock');
const client = new Redis($REDIS_PORT, '127.0.0.1');
const redlock = new Redlock([client], { retryCount: 0 });
redlock.on('clientError', () => {});
(async () => { $1 })().then(() => client.quit(), (e) => { console.log('error', e.message); client.quit(); });"
}

@test "a node-redlock holder makes redlock-run exit 75 without running the command" {
    need_node_redlock
    run nodelock "await redlock.lock('shared', 60000); console.log('locked');"
    assert_output locked
    run "$RL" shared -- echo ran
    assert_failure 75
    refute_output --partial ran
    assert_output --partial "lock 'shared' is held by an unknown holder"
}

@test "a lock held by redlock-run keeps node-redlock out until redlock-run releases it" {
    need_node_redlock
    hold shared
    run nodelock "try { await redlock.lock('shared', 10000); console.log('locked'); }
                  catch (e) { console.log('busy'); }"
    assert_output busy
    touch "$BATS_TEST_TMPDIR/stop"
    wait "$HOLDER_PID"
    HOLDER_PID=
    run nodelock "const l = await redlock.lock('shared', 10000); console.log('locked');
                  await l.unlock(); console.log(await client.exists('shared'));"
    assert_output $'locked\n0'
}

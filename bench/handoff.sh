#!/usr/bin/env bash
# Hand-off benchmark for --wait: N waiters queue behind a holder; each, once it runs, exits at
# once, so the lock passes down the queue N times. Reports
#   - latency from a release (its timestamp in Redis's MONITOR stream) to the start of the next
#     child (the child prints its own start time), p50/p99/max over the N hand-offs;
#   - Redis commands sent per hand-off, counted in the MONITOR stream from before the first waiter
#     starts: everything the waiters send (joining the queue, waking, acquiring, releasing) and the
#     holder's release, divided by the number of hand-offs; commands run inside the Lua scripts
#     are counted apart.
# Usage: bench/handoff.sh [WAITERS] [ROUNDS]   (defaults 50 and 3; loopback only; KEEP=1 keeps the
# temporary directory with the MONITOR logs)
set -euo pipefail
cd "$(dirname "$0")/.."
waiters=${1:-50}
rounds=${2:-3}
RL=${REDLOCK_RUN:-build/redlock-run}
[ -x "$RL" ] || { echo "build first: cmake -S . -B build && cmake --build build" >&2; exit 1; }

dir=$(mktemp -d)
cc -O2 -o "$dir/stamp" bench/stamp.c
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --logfile "$dir/redis.log" \
    --maxclients 4000 &
redis_pid=$!
monitor_pid=
cleanup() {
    if [ -n "$monitor_pid" ]; then kill "$monitor_pid" 2>/dev/null; fi
    kill "$redis_pid" 2>/dev/null
    wait 2>/dev/null
    if [ -n "${KEEP:-}" ]; then echo "kept $dir" >&2; else rm -rf "$dir"; fi
}
trap cleanup EXIT
cli() { redis-cli -p "$port" "$@"; }
until [ "$(cli PING 2>/dev/null)" = PONG ]; do sleep 0.05; done
export REDLOCK_URL="redis://127.0.0.1:$port"
blocked() { cli INFO clients | tr -d '\r' | sed -n 's/^blocked_clients://p'; }
# As embedded: the queue functions are prepended to the script at build time (CMakeLists.txt).
release_sha=$(cat src/lock/scripts/lib/queue.lua src/lock/scripts/release.lua | sha1sum | cut -d' ' -f1)

"$RL" warm-up -- true  # loads the scripts, as any earlier run on a real server would have

for round in $(seq "$rounds"); do
    rm -f "$dir"/start.* "$dir/go"
    "$RL" bench -- sh -c "while [ ! -e '$dir/go' ]; do sleep 0.01; done" &
    holder=$!
    until [ "$(cli EXISTS bench)" = 1 ]; do sleep 0.01; done
    redis-cli -p "$port" MONITOR > "$dir/monitor.$round" 2>/dev/null &
    monitor_pid=$!
    until [ -s "$dir/monitor.$round" ]; do cli PING > /dev/null; sleep 0.01; done
    pids=()
    for i in $(seq "$waiters"); do
        "$RL" --wait 120s bench -- "$dir/stamp" > "$dir/start.$i" &
        pids+=($!)
    done
    until [ "$(blocked)" = "$waiters" ]; do sleep 0.02; done
    touch "$dir/go"
    wait "$holder" "${pids[@]}"
    sleep 0.1
    kill "$monitor_pid"; wait "$monitor_pid" 2>/dev/null || true; monitor_pid=
    cat "$dir"/start.* > "$dir/starts.$round"
done

/usr/bin/python3 - "$dir" "$rounds" "$waiters" "$release_sha" <<'PY'
import collections, re, statistics, sys
d, rounds, waiters, sha = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
bench_own = {"PING", "EXISTS", "INFO"}  # this script's polling, not the tool's
lat, per_handoff, inside = [], [], []
sent = collections.Counter()
for r in range(1, rounds + 1):
    releases, client, lua = [], 0, 0
    for line in open(f"{d}/monitor.{r}"):
        m = re.match(r'^(\d+)\.(\d+) \[\d+ ([^\]]+)\] "([A-Za-z]+)"(?: "([0-9a-f]+)")?', line)
        if not m:
            continue
        src, cmd = m.group(3), m.group(4).upper()
        if src == "lua":
            lua += 1
            continue
        if cmd in bench_own:
            continue
        client += 1
        sent[cmd] += 1
        if cmd == "EVALSHA" and m.group(5) == sha:
            releases.append(int(m.group(1)) * 1_000_000 + int(m.group(2)))
    starts = sorted(int(x) for x in open(f"{d}/starts.{r}").read().split())
    for rel in releases:
        nxt = [s for s in starts if s >= rel]
        if nxt:
            lat.append((nxt[0] - rel) / 1000.0)
    per_handoff.append(client / waiters)
    inside.append(lua / waiters)
lat.sort()
def pct(p): return lat[min(len(lat) - 1, int(round(p / 100 * (len(lat) - 1))))]
print(f"waiters={waiters} rounds={rounds} hand-offs measured={len(lat)}")
print(f"hand-off latency (release -> next child start): p50={pct(50):.3f} ms  "
      f"p99={pct(99):.3f} ms  max={lat[-1]:.3f} ms  mean={statistics.mean(lat):.3f} ms  "
      f"min={lat[0]:.3f} ms")
print(f"Redis commands sent per hand-off: {statistics.mean(per_handoff):.2f} "
      f"({', '.join(f'{k} {v / rounds / waiters:.2f}' for k, v in sent.most_common())}); "
      f"inside the scripts: {statistics.mean(inside):.2f}")
PY

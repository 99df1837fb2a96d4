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
# NODES=3 (default 1) runs the waiters over a Redlock quorum of that many local redis-servers:
# commands are counted on every node, and a release's time is its first node's. PERMITS=N
# (default 1) runs them with --permits N (on one node or on the quorum), behind N holders; a
# permit's release is then permits.lua's 'finish' (or 'release') operation, and with N hand-offs
# in flight a release is paired with the first start after it, which another release may have
# caused (a rough figure).
set -euo pipefail
cd "$(dirname "$0")/.."
waiters=${1:-50}
rounds=${2:-3}
RL=${REDLOCK_RUN:-build/redlock-run}
[ -x "$RL" ] || { echo "build first: cmake -S . -B build && cmake --build build" >&2; exit 1; }

nodes=${NODES:-1}
permits=${PERMITS:-1}
[ "$nodes" -ge 1 ] && [ "$permits" -ge 1 ] || { echo "NODES and PERMITS are at least 1" >&2; exit 1; }

dir=$(mktemp -d)
cc -O2 -o "$dir/stamp" bench/stamp.c
ports=() redis_pids=() monitor_pids=()
for n in $(seq 0 $((nodes - 1))); do
    ports[n]=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    mkdir -p "$dir/n$n"
    redis-server --port "${ports[n]}" --bind 127.0.0.1 --dir "$dir/n$n" --save '' \
        --logfile "$dir/n$n/redis.log" --maxclients 4000 &
    redis_pids[n]=$!
done
cleanup() {
    local p
    for p in "${monitor_pids[@]}" "${redis_pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    if [ -n "${KEEP:-}" ]; then echo "kept $dir" >&2; else rm -rf "$dir"; fi
}
trap cleanup EXIT
url=
for n in $(seq 0 $((nodes - 1))); do
    until [ "$(redis-cli -p "${ports[n]}" PING 2>/dev/null)" = PONG ]; do sleep 0.05; done
    url+="${url:+,}redis://127.0.0.1:${ports[n]}"
done
export REDLOCK_URL="$url"
# A server started here is new and empty, as one restarted without persistence is: without this,
# the restart guard (default the TTL) would hold every new name back that long.
export REDLOCK_RESTART_GUARD="${REDLOCK_RESTART_GUARD:-0}"
# Every node has every waiter blocked (a quorum's waiter blocks on each node).
all_blocked() {
    local n b
    for n in $(seq 0 $((nodes - 1))); do
        b=$(redis-cli -p "${ports[n]}" INFO clients | tr -d '\r' | sed -n 's/^blocked_clients://p')
        [ "$b" = "$waiters" ] || return 1
    done
}
# The digests EVALSHA names the scripts by, as this build embedded them (cmake/embed.cmake
# writes each beside the script, preludes included): hashing the sources here went stale when a
# prelude was added, and then no release was recognised at all.
embedded_sha() {
    local f
    f="$(dirname "$RL")/embedded/$1_lua.cpp"
    sed -n 's/.*_sha1 = "\([0-9a-f]\{40\}\)";.*/\1/p' "$f" 2>/dev/null | grep . ||
        { echo "no script digest in $f: REDLOCK_RUN must be the binary of a build tree" >&2; exit 1; }
}
release_sha=$(embedded_sha release)
permits_sha=$(embedded_sha permits)
# A run ends with ledger.lua (the record and the release in one step) when the ledger is on.
ledger_sha=$(embedded_sha ledger)
opts=()
[ "$permits" = 1 ] || opts=(--permits "$permits")

"$RL" "${opts[@]}" warm-up -- true  # loads the scripts, as any earlier run on a real server would have

for round in $(seq "$rounds"); do
    rm -f "$dir"/start.* "$dir/go"
    holders=()
    for h in $(seq "$permits"); do
        rm -f "$dir/held.$h"
        "$RL" "${opts[@]}" bench -- sh -c "touch '$dir/held.$h'; while [ ! -e '$dir/go' ]; do sleep 0.01; done" &
        holders+=($!)
        until [ -e "$dir/held.$h" ]; do sleep 0.01; done  # it holds the lock (or a permit)
    done
    monitor_pids=()
    for n in $(seq 0 $((nodes - 1))); do
        redis-cli -p "${ports[n]}" MONITOR > "$dir/monitor.$round.$n" 2>/dev/null &
        monitor_pids[n]=$!
        until [ -s "$dir/monitor.$round.$n" ]; do redis-cli -p "${ports[n]}" PING > /dev/null; sleep 0.01; done
    done
    pids=()
    for i in $(seq "$waiters"); do
        "$RL" "${opts[@]}" --wait 120s bench -- "$dir/stamp" > "$dir/start.$i" &
        pids+=($!)
    done
    until all_blocked; do sleep 0.02; done
    touch "$dir/go"
    wait "${holders[@]}" "${pids[@]}"
    sleep 0.1
    for p in "${monitor_pids[@]}"; do kill "$p"; wait "$p" 2>/dev/null || true; done
    monitor_pids=()
    cat "$dir"/start.* > "$dir/starts.$round"
done

/usr/bin/python3 - "$dir" "$rounds" "$waiters" "$release_sha" "$permits_sha" "$nodes" "$permits" "$ledger_sha" <<'PY'
import collections, re, statistics, sys
d, rounds, waiters, sha, permits_sha = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
nodes, permits, ledger_sha = int(sys.argv[6]), int(sys.argv[7]), sys.argv[8]
bench_own = {"PING", "EXISTS", "INFO"}  # this script's polling, not the tool's
lat, per_handoff, inside = [], [], []
sent = collections.Counter()
for r in range(1, rounds + 1):
    releases, client, lua = [], 0, 0
    for n in range(nodes):
      for line in open(f"{d}/monitor.{r}.{n}"):
        m = re.match(r'^(\d+)\.(\d+) \[\d+ ([^\]]+)\] "([A-Za-z]+)"(?: "([0-9a-f]+)" "(\d+)")?(.*)', line)
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
        if n != 0 or cmd != "EVALSHA":
            continue
        # A release: release.lua, or permits.lua's 'release' or 'finish' (its ARGV[1], after the keys).
        args = re.findall(r'"((?:[^"\\]|\\.)*)"', m.group(7) or "")
        op = args[int(m.group(6))] if m.group(6) and len(args) > int(m.group(6)) else None
        # A run's end: ledger.lua (its record and the release in one step), or release.lua; with
        # permits, permits.lua's 'finish' (the record and the permit's release in one step), or
        # its 'release' without the ledger.
        if (m.group(5) == permits_sha and op in ("release", "finish")) if permits > 1 else m.group(5) in (sha, ledger_sha):
            releases.append(int(m.group(1)) * 1_000_000 + int(m.group(2)))
    starts = sorted(int(x) for x in open(f"{d}/starts.{r}").read().split())
    for rel in releases:
        nxt = [s for s in starts if s >= rel]
        if nxt:
            lat.append((nxt[0] - rel) / 1000.0)
    per_handoff.append(client / waiters)
    inside.append(lua / waiters)
if not lat:
    sys.exit("no hand-off seen: no release in the MONITOR stream was followed by a start")
lat.sort()
def pct(p): return lat[min(len(lat) - 1, int(round(p / 100 * (len(lat) - 1))))]
print(f"waiters={waiters} rounds={rounds} hand-offs measured={len(lat)} nodes={nodes} permits={permits}")
print(f"hand-off latency (release -> next child start): p50={pct(50):.3f} ms  "
      f"p99={pct(99):.3f} ms  max={lat[-1]:.3f} ms  mean={statistics.mean(lat):.3f} ms  "
      f"min={lat[0]:.3f} ms")
print(f"Redis commands sent per hand-off: {statistics.mean(per_handoff):.2f} "
      f"({', '.join(f'{k} {v / rounds / waiters:.2f}' for k, v in sent.most_common())}); "
      f"inside the scripts: {statistics.mean(inside):.2f}")
PY

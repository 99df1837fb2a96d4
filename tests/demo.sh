#!/usr/bin/env bash
# The main job, end to end: build redlock-run, start a throwaway redis-server on a free loopback
# port, and show two runs contending for one lock.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc)" >/dev/null
RL=build/redlock-run

dir=$(mktemp -d)
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --logfile "$dir/redis.log" &
redis_pid=$!
trap 'kill "$redis_pid" 2>/dev/null; wait "$redis_pid" 2>/dev/null; rm -rf "$dir"' EXIT
until [ "$(redis-cli -p "$port" PING 2>/dev/null)" = PONG ]; do sleep 0.05; done
export REDLOCK_URL="redis://127.0.0.1:$port"
# A server started here is new and empty, as one restarted without persistence is: without this,
# the restart guard (default the TTL) would hold every new name back that long.
export REDLOCK_RESTART_GUARD="${REDLOCK_RESTART_GUARD:-0}"
echo "redis-server on $REDLOCK_URL"
echo

echo '$ redlock-run -v --hold-info nightly-report -- sh -c "...; sleep 2" &     # run A'
"$RL" -v --hold-info nightly-report -- sh -c \
    'echo "[A] holding the lock with fence token $REDLOCK_FENCE; working for 2s"; sleep 2; echo "[A] done"' &
a=$!
until [ "$(redis-cli -p "$port" EXISTS nightly-report)" = 1 ]; do sleep 0.02; done

echo '$ redlock-run nightly-report -- echo "[B] running"                # run B, while A holds it'
set +e
"$RL" nightly-report -- echo "[B] running"
b=$?
set -e
echo "[B] exit status $b (75 = lock busy, the command did not run)"
echo
echo '$ redlock-run status nightly-report                                # what an operator sees'
"$RL" status nightly-report
echo

echo '$ redlock-run --wait 1m nightly-report -- echo "[C] running"      # run C queues behind A'
"$RL" --wait 1m nightly-report -- sh -c 'echo "[C] running with fence token $REDLOCK_FENCE, as soon as A released"'
echo "[C] exit status $?"
wait "$a"
echo "[A] exit status $? (the command's own)"
echo
echo '$ redlock-run status nightly-report                                # and now it is free'
set +e
"$RL" status nightly-report
echo "(exit status $?: 1 = free)"

#!/usr/bin/env bash
# Writes DATA to the Redis hash KEY only if this holder's REDLOCK_FENCE is not older than the
# fence stored beside the data in that hash: the fencing recipe with Redis itself as the store.
#
#   REDIS_STORE_URL=redis://store:6379/0 redlock-run report -- redis-write.sh KEY DATA
#
# The hash has two fields, `fence` and `data`. REDIS_STORE_URL is the Redis that holds the data
# (it may be another server than the lock's); a password goes in REDISCLI_AUTH, which redis-cli
# reads, rather than in the URL. Exit status: 0 written, 4 refused (a newer holder has written),
# 64 usage, 69 an error reply from Redis, other: redis-cli could not ask.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: redis-write.sh KEY DATA (under redlock-run)" >&2; exit 64; }
key=$1 data=$2
fence=${REDLOCK_FENCE:-}
[[ $fence =~ ^[0-9]+$ ]] || { echo "redis-write.sh: REDLOCK_FENCE is not set to a number" >&2; exit 64; }
url=${REDIS_STORE_URL:?redis-write.sh: set REDIS_STORE_URL to the Redis that holds the data}

# One script, so Redis runs the compare and the write with nothing in between. `<`, not `<=`:
# the same holder may write several times with its one fence. Lua numbers are doubles, exact
# up to 2^53 (9.0e15): fences start from Redis's clock in microseconds (1.7e15 today) and grow
# by one per acquisition. The reply is 1 when written, else the stored fence that refused us.
script='
local stored = tonumber(redis.call("HGET", KEYS[1], "fence") or "0")
if tonumber(ARGV[1]) < stored then return {0, stored} end
redis.call("HSET", KEYS[1], "fence", ARGV[1], "data", ARGV[2])
return {1, stored}'

# Key, fence and data go as the script's KEYS and ARGV, never into the script's text.
reply=$(redis-cli -u "$url" --no-auth-warning EVAL "$script" 1 "$key" "$fence" "$data")
# redis-cli prints an error reply on stdout with status 0: anything but our two numbers is one.
if ! [[ $reply =~ ^([01])$'\n'([0-9]+)$ ]]; then
    echo "redis-write.sh: unexpected reply from Redis: $reply" >&2
    exit 69
fi
if [ "${BASH_REMATCH[1]}" = 1 ]; then
    echo "written: $key with fence $fence"
    exit 0
fi
echo "refused: $key was written with fence ${BASH_REMATCH[2]}, newer than ours ($fence)" >&2
exit 4

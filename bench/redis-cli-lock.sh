#!/bin/sh
# The lock a user would write by hand with redis-cli, for comparison in bench/run:
# SET NX PX, run the command, compare-and-delete with EVAL. No renewal, no fencing, no signals.
# Usage: redis-cli-lock.sh PORT KEY COMMAND [ARGS...]
port=$1 key=$2
shift 2
token=$(cat /proc/sys/kernel/random/uuid)
[ "$(redis-cli -p "$port" SET "$key" "$token" NX PX 30000)" = OK ] || exit 75
"$@"
status=$?
redis-cli -p "$port" EVAL \
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0" \
    1 "$key" "$token" > /dev/null
exit $status

#!/bin/sh
# The command each of bench/run's 1,000 contenders runs under the lock: a read-modify-write of a
# counter (an overlap would lose an increment) between two timestamps (an overlap would show as
# intervals that cross). Usage: critical.sh STAMP DIR
stamp=$1 dir=$2
start=$("$stamp")
n=$(cat "$dir/counter")
echo $((n + 1)) > "$dir/counter"
end=$("$stamp")
echo "$start $end" >> "$dir/intervals"

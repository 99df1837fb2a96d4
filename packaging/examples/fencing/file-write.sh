#!/usr/bin/env bash
# Publishes the file SOURCE as TARGET on shared storage only if this holder's REDLOCK_FENCE is
# not older than the fence recorded beside TARGET: the fencing recipe for files.
#
#   redlock-run report -- sh -c 'make-report > /tmp/report.csv && file-write.sh /tmp/report.csv /shared/report.csv'
#
# Beside TARGET it keeps TARGET.fence (the fence of the last write) and TARGET.lock (the lock
# file every writer takes). Every writer of TARGET must go through this script (or the same
# protocol): the check is only as good as the lock it is made under, see README.md.
# Exit status: 0 written, 4 refused (a newer holder has written), 64 usage, other: an error.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: file-write.sh SOURCE TARGET (under redlock-run)" >&2; exit 64; }
source_file=$1 target=$2
fence=${REDLOCK_FENCE:-}
[[ $fence =~ ^[0-9]+$ ]] || { echo "file-write.sh: REDLOCK_FENCE is not set to a number" >&2; exit 64; }
dir=$(dirname -- "$target")
name=$(basename -- "$target")

# The copy is made outside the lock (it may be long) into the target's directory, so that the
# renames below stay within one filesystem, where rename(2) is atomic: readers see the old or
# the new file, never part of one. sync: the data is on the storage before it is published.
data_tmp=$(mktemp "$dir/.$name.XXXXXX")
fence_tmp=$(mktemp "$dir/.$name.fence.XXXXXX")
trap 'rm -f -- "$data_tmp" "$fence_tmp"' EXIT
cp -- "$source_file" "$data_tmp"
# mktemp made it private; give it the mode a plain `cp` to TARGET would have.
chmod "$(printf '%o' $((0666 & ~0$(umask))))" -- "$data_tmp"
echo "$fence" > "$fence_tmp"
sync -- "$data_tmp" "$fence_tmp"

# The compare and the renames under one exclusive lock, which every writer takes: no other
# writer can record a newer fence between our compare and our rename. A lock file opened for
# writing rather than the directory itself: NFS implements flock with byte-range locks, and an
# exclusive one needs a file open for writing.
exec 9>>"$dir/$name.lock"
flock 9
stored=0
[ ! -e "$dir/$name.fence" ] || stored=$(cat -- "$dir/$name.fence")
[[ $stored =~ ^[0-9]+$ ]] || { echo "file-write.sh: $dir/$name.fence does not hold a number" >&2; exit 65; }
# `<`, not `<=`: the same holder may write several times with its one fence.
if ((fence < stored)); then
    echo "refused: $target was written with fence $stored, newer than ours ($fence)" >&2
    exit 4
fi
# The fence first: a crash between the two renames leaves the new fence with the old data,
# which refuses the stale holders it should and lets this holder (or a newer one) write again.
# The other order would leave new data under an old fence, open to a holder older than ours.
mv -f -- "$fence_tmp" "$dir/$name.fence"
mv -f -- "$data_tmp" "$target"
exec 9>&-
echo "written: $target with fence $fence"

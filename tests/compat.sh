#!/usr/bin/env bash
# Runs the end-to-end suite against other server binaries: a Redis-protocol server that claims to
# be compatible (Valkey, another Redis build) proves it here before a packager or a user relies
# on it. Not part of CI: such servers are not Debian 12 packages.
#
#   bash tests/compat.sh SERVER [CLI [SENTINEL]]
#
# SERVER is the server binary (valkey-server, a redis-server of another version); CLI and
# SENTINEL default to the binaries beside it named alike (valkey-cli and valkey-sentinel next to
# valkey-server). They are linked as redis-server, redis-cli and redis-sentinel first on PATH,
# which is where the end-to-end helpers look for them. Every end-to-end file runs but the
# packaging one (it tests the .deb, not the server) and interop.bats (node-redlock from npm).
# The release tree in build/ is built if missing. Exits with ctest's status; the closing lines
# name the server's version. The README's "Servers" paragraph keeps the last results.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "tests/compat.sh: $*" >&2; exit 64; }
[ $# -ge 1 ] && [ $# -le 3 ] || die "usage: bash tests/compat.sh SERVER [CLI [SENTINEL]]"
server=$(realpath -es "$1") || die "no such server binary: $1"
dir=$(dirname "$server")
base=$(basename "$server")
cli=$(realpath -es "${2:-$dir/${base/server/cli}}") || die "no CLI beside $server; name it"
sentinel=$(realpath -es "${3:-$dir/${base/server/sentinel}}") ||
    sentinel=$server # a server binary started as *-sentinel runs as a sentinel, as redis-sentinel is
for b in "$server" "$cli" "$sentinel"; do [ -x "$b" ] || die "not an executable: $b"; done
bash tests/deps.sh
if [ ! -x build/redlock-run ]; then
    cmake -S . -B build -G Ninja -DREDLOCK_TESTS=ON >/dev/null
    cmake --build build -j "$(nproc)" >/dev/null
fi
bin=$(mktemp -d "${TMPDIR:-/tmp}/redlock-run-compat.XXXXXX")
trap 'rm -rf "$bin"' EXIT
ln -s "$server" "$bin/redis-server"
ln -s "$cli" "$bin/redis-cli"
# redis-server decides to run as a sentinel from the name it was started as.
ln -s "$sentinel" "$bin/redis-sentinel"
version=$("$bin/redis-server" --version)
[ "$(PATH="$bin:$PATH" command -v redis-server)" = "$bin/redis-server" ] ||
    die "redis-server on PATH is not the one named"
echo "== end-to-end suite against: $version"
status=0
(cd build && PATH="$bin:$PATH" ctest --output-on-failure -j "$(($(nproc) * 2))" -L '^e2e$' \
    -E '^e2e\.(packaging|interop)$') || status=$?
echo "== server: $version"
echo "== cli: $("$bin/redis-cli" --version)"
exit "$status"

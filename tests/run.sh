#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds with warnings as errors, runs the unit
# tests and the end-to-end bats suite against throwaway redis-servers, then does it all again
# under AddressSanitizer + UndefinedBehaviorSanitizer and under ThreadSanitizer (the renewer
# thread shares the lock's connection and lease with the main loop). Any sanitizer report ends
# the process with an error, which fails the test that ran it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tests/deps.sh
jobs=$(nproc)

suite() {
    local dir=$1
    shift
    cmake -S . -B "$dir" -DREDLOCK_WERROR=ON -DREDLOCK_TESTS=ON "$@" >/dev/null
    cmake --build "$dir" -j "$jobs"
    (cd "$dir" && ctest --output-on-failure -j "$jobs")
}

echo "== release build"
suite build
echo "== ASan + UBSan build"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    suite build-asan -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_SANITIZE=address,undefined
echo "== TSan build"
TSAN_OPTIONS=halt_on_error=1 suite build-tsan -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_SANITIZE=thread

#!/usr/bin/env bash
# The test suite, in two tiers with one purpose each.
#
#   bash tests/run.sh                the README's test command: installs what is missing, builds
#                                    the release tree with warnings as errors, and runs every
#                                    test against it: the unit tests, the fuzz seed replays, the
#                                    end-to-end bats files against throwaway servers, and the
#                                    packaging tests (a .deb, lintian, cron, an install).
#   bash tests/run.sh --sanitizers   the sanitizer passes that CI adds after it: the unit tests and
#                                    fuzz replays in full, and the end-to-end files labelled
#                                    `sanitize` in tests/CMakeLists.txt (every topology, TLS,
#                                    signals, the watchdog, hostile servers, holders' concurrency),
#                                    under AddressSanitizer (LeakSanitizer and UBSan's vptr check
#                                    included) and under ThreadSanitizer + UndefinedBehaviorSanitizer
#                                    (the renewer thread shares the lock's connection and lease with
#                                    the main loop). Any sanitizer report ends the process with an
#                                    error, which fails the test that ran it.
#
# Decisions are proved in the unit tests, which every pass runs whole; an end-to-end file proves
# what needs a real server, process group or package, and the sanitizers only add to it where
# memory or threads are at stake, which the labelled subset reaches. .ci/run runs both tiers.
#
# UBSan rides with TSan, not with ASan: ASan puts a redzone around every global, UBSan's check
# records (a source location and type descriptors for each check) included, which made the ASan
# + UBSan redlock-run carry 13.5 MB of .data that every start registered and every exit's leak
# scan read: 98 ms of CPU for a `redlock-run --version`, against 51 ms for ASan alone and 57 ms
# for TSan + UBSan (55 ms TSan alone). One UBSan check, vptr, cannot run under TSan
# (CMakeLists.txt says why) and stays in the ASan pass.
#
# In the sanitizer tier the ASan pass's tests run while the TSan configuration compiles, the
# compiler at a lower priority than the tests; never two passes' tests at once.
set -euo pipefail
cd "$(dirname "$0")/.."
tier=release
case "${1:-}" in
"") ;;
--sanitizers) tier=sanitizers ;;
*)
    echo "usage: bash tests/run.sh [--sanitizers]" >&2
    exit 64
    ;;
esac
bash tests/deps.sh
jobs=$(nproc)
# Test processes sleep far more than they compute: twice as many as cores keeps the cores busy.
test_jobs=$((jobs * 2))
logs=$(mktemp -d "${TMPDIR:-/tmp}/redlock-run-suite.XXXXXX")
trap 'rm -rf "$logs"' EXIT
# The tests' own temporary files (bats's run directories among them) in a directory of this run:
# a tmp cleaner or another suite sweeping /tmp/bats-run-* cannot pull them from under a test.
export TMPDIR="$logs/tmp"
mkdir "$TMPDIR"

build() {
    local dir=$1
    shift
    # A tree configured by hand with Make's generator cannot switch generators: start it afresh.
    if [ -f "$dir/CMakeCache.txt" ] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$dir/CMakeCache.txt"; then
        echo "   $dir was configured for another generator: reconfiguring it for Ninja"
        rm -rf "$dir"
    fi
    # Ninja, with the static layers' objects not waiting for the layers they link (CMake's
    # optimized dependencies): Make's generator builds the layers one after the other, leaving a
    # core idle while a small layer compiles; the same ASan build took 179 s with Make and
    # 106 s with this, for the same CPU time.
    cmake -S . -B "$dir" -G Ninja -DCMAKE_OPTIMIZE_DEPENDENCIES=ON -DREDLOCK_WERROR=ON \
        -DREDLOCK_TESTS=ON "$@" >/dev/null
    nice -n 10 cmake --build "$dir" -j "$jobs" >"$logs/build-$(basename "$dir").log" 2>&1 ||
        { cat "$logs/build-$(basename "$dir").log"; return 1; }
}

declare -A test_pids
# start_tests NAME DIR [CTEST ARGS...]: runs the pass's tests in the background into its log.
start_tests() {
    local name=$1 dir=$2
    shift 2
    (
        cd "$dir"
        status=0
        ctest --output-on-failure -j "$test_jobs" "$@" >"$logs/$name.log" 2>&1 || status=$?
        echo "$status" >"$logs/$name.status"
    ) &
    test_pids[$name]=$!
}

# finish_tests NAME: waits for the pass's tests and prints their output; fails if they did.
finish_tests() {
    local name=$1
    wait "${test_pids[$name]}" || true
    echo "== $name tests"
    cat "$logs/$name.log"
    [ "$(cat "$logs/$name.status" 2>/dev/null)" = 0 ]
}

failed=0
SECONDS=0
if [ "$tier" = release ]; then
    echo "== release build"
    build build
    echo "   built at ${SECONDS}s"
    start_tests release build
    finish_tests release || failed=1
else
    # The two sanitizer builds: precompiled common headers, line tables only (-g1: a report
    # still names file and line) instead of full debug information, and a unity build (16
    # sources a compiler run; the unit tests stay apart, see tests/CMakeLists.txt). Precompiled
    # headers and -g1 cut a sanitizer build's CPU time by about 30% (201 -> 142 CPU seconds);
    # unity, a further 258 -> 191 CPU seconds, 139 -> 103 s wall, for the ASan build. The
    # release build keeps none of them, so that it still catches a missing #include or a name
    # two files both define.
    fast_debug=(-DREDLOCK_PCH=ON -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_UNITY_BUILD=ON
        -DCMAKE_UNITY_BUILD_BATCH_SIZE=16)
    export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 TSAN_OPTIONS=halt_on_error=1
    echo "== ASan build"
    build build-asan -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_SANITIZE=address,vptr "${fast_debug[@]}"
    echo "   built at ${SECONDS}s"
    start_tests asan build-asan -L '^sanitize$'

    echo "== TSan + UBSan build"
    build build-tsan -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_SANITIZE=thread,undefined "${fast_debug[@]}"
    echo "   built at ${SECONDS}s"
    finish_tests asan || failed=1
    start_tests tsan build-tsan -L '^sanitize$'
    finish_tests tsan || failed=1
fi

echo "== $tier tier: ${SECONDS}s, $([ "$failed" = 0 ] && echo passed || echo FAILED)"
exit "$failed"

#!/usr/bin/env bash
# The unit tests under valgrind's memcheck: an invalid read or write, a use of uninitialised
# memory or a leak (definite or possible) fails the run. A plain build (no sanitizers: they and
# valgrind exclude each other) in BUILD_DIR, default build-valgrind.
# Usage: tests/valgrind.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-valgrind}
cmake -S . -B "$dir" -DREDLOCK_WERROR=ON -DREDLOCK_TESTS=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$dir" -j "${JOBS:-$(nproc)}" --target unit_tests
# Children (the redis-server the lock tests start, the commands the child tests spawn) are not
# ours to check; --child-silent-after-fork keeps their output out of the report.
valgrind --quiet --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,possible \
    --show-leak-kinds=definite,possible --track-origins=yes --child-silent-after-fork=yes \
    "$dir/tests/unit_tests" --gtest_brief=1

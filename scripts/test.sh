#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh -DALTO_BUILD_TESTS=ON -DALTO_BUILD_BENCH=ON -DALTO_BUILD_FUZZERS=ON
echo "test.sh: built in ${SECONDS} s; ctest reports the tests' own time"
cd build
ctest --output-on-failure -j "$(nproc)" "$@"

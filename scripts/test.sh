#!/usr/bin/env bash
# Installs what is missing, builds, runs every test (labels unit, multirank; unit suites side by
# side, docs/testing.md), then rebuilds with AddressSanitizer + UndefinedBehaviorSanitizer and runs
# the unit tests again.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
jobs="$(nproc)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$jobs"
ctest --test-dir build -j"$jobs" --output-on-failure
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DOH_SANITIZE=ON
cmake --build build-asan -j"$jobs" --target oh_unit_tests # what -L unit runs, nothing else
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan -L unit -j"$jobs" --output-on-failure

#!/usr/bin/env bash
# Installs what is missing, builds, and runs the main job: the 8-rank emulator demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j"$(nproc)"
./build/tools/hcclrun -n 8 ./build/samples/basics/basics

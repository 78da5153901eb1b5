#!/usr/bin/env bash
# Configures and builds detrain (Release) into build/ (override with BUILD_DIR). Extra arguments
# go to CMake, e.g. scripts/build.sh -DDT_ENABLE_CUDA=OFF.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
gen=()
if command -v ninja >/dev/null && [[ ! -f "$build/CMakeCache.txt" ]]; then gen=(-G Ninja); fi
cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build" -j "$(nproc)"

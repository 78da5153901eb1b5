#!/usr/bin/env bash
# Builds detrain and runs the test suite (the fast label: everything CI runs). Installs missing
# build dependencies first. Extra arguments go to ctest, e.g. scripts/test.sh -R Conv.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --build
scripts/lint.sh
scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" -L fast -j "$(nproc)" --output-on-failure --timeout 900 "$@"

#!/usr/bin/env bash
# Builds detrain and runs the test suite (the fast label: everything CI runs), then the Python
# package's tests. Installs missing build dependencies first. Extra arguments go to ctest, e.g.
# scripts/test.sh -R Conv.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --build
scripts/lint.sh
# The Python module is built in the same build (DT_PYTHON), with nanobind from build-pyenv.
python=$(scripts/python_env.sh)
scripts/build.sh -DDT_PYTHON=ON -DPython_EXECUTABLE="$python"
ctest --test-dir "${BUILD_DIR:-build}" -L fast -j "$(nproc)" --output-on-failure --timeout 900 "$@"
# The Python package (tests/python): after the C++ suite, against the same build.
DETRAIN_BUILD="${BUILD_DIR:-build}" "$python" -m pytest -q tests/python
# The package's types, its stub _detrain.pyi included (the torch modules need PyTorch's types).
"$python" -m mypy --strict python/detrain --exclude 'detrain/torch(_models)?\.py$'

#!/usr/bin/env bash
# The README's Python install on this clone, as a user runs it: a fresh virtual environment of
# Debian's /usr/bin/python3 (another python earlier on PATH could hide PEP 668), `pip install .`
# CPU-only, then a run from Python must give the weights_sha256 of the same run from the
# command line (build/detrain), and a study must train its replicas with the package's own
# detrain program. Works in build-pip/ (removed first).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf build-pip
mkdir -p build-pip
/usr/bin/python3 -m venv build-pip/venv
build-pip/venv/bin/pip install -q . --config-settings=cmake.define.DT_ENABLE_CUDA=OFF \
  --config-settings=build-dir=build-pip/cmake
flags=(--model smallcnn --epochs 1 --limit-train 2048 --progress none)
py=$(cd build-pip && venv/bin/python -c "import detrain
print(detrain.train(model='smallcnn', epochs=1, limit_train=2048, progress='none',
                    out='py').weights_sha256)" | tail -n 1)  # after the run's own summary
"${BUILD_DIR:-build}/detrain" train "${flags[@]}" --out build-pip/cli >/dev/null
cli=$(python3 -c "import json; print(json.load(open('build-pip/cli/result.json'))['weights_sha256'])")
if [[ $py != "$cli" ]]; then
  echo "check_pip_install: detrain.train gave $py, detrain train $cli" >&2
  exit 1
fi
# The package's own detrain program trains a study's replicas.
(cd build-pip && venv/bin/python -c "import detrain
s = detrain.study(model='smallcnn', replicas=2, variants='control', epochs=1, limit_train=128,
                  limit_test=64, out='study', progress='none')
assert [r['variant'] for r in s.summary] == ['control'], s.summary" >/dev/null)
echo "check_pip_install: pip install . works; Python and the command line give $py"

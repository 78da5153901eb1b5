#!/usr/bin/env bash
# Makes build-pyenv (override with PYENV_DIR): a virtual environment of Debian's python3 with what
# the Python module's build, tests and type check take from PyPI (nanobind, numpy, pytest, mypy).
# Prints its interpreter. Debian's python3 refuses pip outside a virtual environment (PEP 668).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${PYENV_DIR:-build-pyenv}
if [[ ! -x $venv/bin/python ]]; then
  /usr/bin/python3 -m venv "$venv" >&2
fi
if ! "$venv/bin/python" -c 'import nanobind, numpy, pytest, mypy' 2>/dev/null; then
  "$venv/bin/pip" install -q nanobind numpy pytest mypy >&2
fi
echo "$PWD/$venv/bin/python"

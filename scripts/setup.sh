#!/usr/bin/env bash
# Installs what detrain needs from Debian's packages (idempotent: installs only what is missing).
#   scripts/setup.sh          build + test dependencies, the Fashion-MNIST data set and the text
#                             corpus (dict-devil: The Devil's Dictionary, datasets/text_corpus.h)
#   scripts/setup.sh --build  build + test dependencies only
#   scripts/setup.sh --peers  also Debian's PyTorch (python3-torch) and OpenBLAS, and the virtual
#                             environment .venv-peers with PyTorch 2.x and JAX from PyPI (PyTorch's
#                             Linux wheel brings CUDA libraries: about 6 GB), for bench/peers/
#   scripts/setup.sh --checks also clang, libFuzzer and LLVM's OpenMP with Archer, for
#                             scripts/fuzz.sh and scripts/sanitize.sh tsan
set -euo pipefail
pkgs=(cmake ninja-build g++ zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
      nlohmann-json3-dev python3 python3-venv python3-dev openmpi-bin libopenmpi-dev xz-utils)
if [[ "${1:-}" != "--build" ]]; then
  pkgs+=(dataset-fashion-mnist dict-devil)
fi
if [[ "${1:-}" == "--peers" ]]; then
  pkgs+=(python3-torch libopenblas-dev)
fi
if [[ "${1:-}" == "--checks" ]]; then
  pkgs+=(clang-14 libclang-rt-14-dev libomp-14-dev)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# The PyPI peers live in a virtual environment of Debian's python3 (PEP 668 forbids pip outside
# one); python3-dev gives torch.compile's C++ code generator its headers, and the Python module
# its own.
peers_venv() {
  local venv
  venv="$(cd "$(dirname "$0")/.." && pwd)/.venv-peers"
  if [[ ! -x "$venv/bin/python" ]]; then
    echo "setup: creating $venv"
    /usr/bin/python3 -m venv "$venv"
  fi
  if "$venv/bin/python" -c 'import torch, numpy, jax' 2>/dev/null; then
    echo "setup: .venv-peers has torch $("$venv/bin/python" -c 'import torch; print(torch.__version__)')," \
         "jax $("$venv/bin/python" -c 'import jax; print(jax.__version__)')"
    return
  fi
  "$venv/bin/pip" install -q --upgrade pip
  "$venv/bin/pip" install -q "torch>=2.4" numpy "jax[cpu]"
}

if ((${#missing[@]} == 0)); then
  echo "setup: all packages present (${pkgs[*]})"
  if [[ "${1:-}" == "--peers" ]]; then peers_venv; fi
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root (or sudo) to run: apt-get install ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
if [[ "${1:-}" == "--peers" ]]; then peers_venv; fi

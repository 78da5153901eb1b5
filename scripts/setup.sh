#!/usr/bin/env bash
# Installs what detrain needs from Debian's packages (idempotent: installs only what is missing).
#   scripts/setup.sh          build + test dependencies, the Fashion-MNIST data set and the text
#                             corpus (dict-devil: The Devil's Dictionary, datasets/text_corpus.h)
#   scripts/setup.sh --build  build + test dependencies only
#   scripts/setup.sh --peers  also PyTorch (python3-torch) and OpenBLAS, for bench/peers/
#   scripts/setup.sh --checks also clang, libFuzzer and LLVM's OpenMP with Archer, for
#                             scripts/fuzz.sh and scripts/sanitize.sh tsan
set -euo pipefail
pkgs=(cmake ninja-build g++ zlib1g-dev libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
      nlohmann-json3-dev python3 openmpi-bin libopenmpi-dev xz-utils)
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
if ((${#missing[@]} == 0)); then
  echo "setup: all packages present (${pkgs[*]})"
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

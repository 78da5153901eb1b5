#!/usr/bin/env bash
# The SASS (Hopper machine code) of a CUDA source's kernels, without a GPU: what nvcc makes of
# the index arithmetic and accumulators, for speed work argued before a GPU session can time it.
#   scripts/sass.sh kernels/cuda/pool2d.cu            a line per kernel: instructions, calls
#                                                     (division subroutines), MUFU (reciprocals
#                                                     of integer and float divisions, square
#                                                     roots), STL (local-memory stores), LDG
#   scripts/sass.sh kernels/cuda/pool2d.cu gather     the whole SASS of the kernels whose
#                                                     mangled name contains "gather"
# Counts are static (every path of the code, fallbacks included), not executed instructions.
# nvdisasm is not in the CUDA toolkit here: the first run fetches NVIDIA's nvdisasm wheel from
# PyPI (pip download) into build/tools/ and uses it from there.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${1:?usage: scripts/sass.sh kernels/cuda/X.cu [kernel-name-part]}
want=${2:-}
[[ -f $src ]] || { echo "sass.sh: no file $src" >&2; exit 2; }
tools=build/tools
nvdisasm=$(command -v nvdisasm || true)
if [[ -z $nvdisasm ]]; then
  nvdisasm=$(find "$tools" -name nvdisasm -type f 2>/dev/null | head -1 || true)
fi
if [[ -z $nvdisasm ]]; then
  mkdir -p "$tools"
  echo "sass.sh: fetching nvdisasm (pip download nvidia-cuda-nvdisasm) into $tools" >&2
  pip download --quiet --no-deps --dest "$tools" nvidia-cuda-nvdisasm >&2 ||
    { echo "sass.sh: could not fetch nvdisasm from PyPI" >&2; exit 1; }
  python3 -m zipfile -e "$tools"/nvidia_cuda_nvdisasm-*.whl "$tools/nvdisasm-wheel"
  nvdisasm=$(find "$tools/nvdisasm-wheel" -name nvdisasm -type f | head -1)
  chmod +x "$nvdisasm"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The kit's flags (scripts/gpu_kit.sh): sm_90, no contraction.
nvcc -DDT_WITH_CUDA=1 -I. -O3 -std=c++20 --fmad=false -arch=sm_90 -cubin "$src" \
  -o "$work/k.cubin" 2>"$work/nvcc.log" || { cat "$work/nvcc.log" >&2; exit 1; }
"$nvdisasm" -c "$work/k.cubin" >"$work/k.sass" 2>/dev/null
if [[ -n $want ]]; then
  awk -v K="$want" '/^\.text\..*:$/ {f = index($0, K) > 0} f' "$work/k.sass"
  exit 0
fi
awk '
  /^\.text\..*:$/ { name = substr($0, 7, length($0) - 7); order[++n] = name; next }
  name != "" && /^ +\/\*[0-9a-f]+\*\// {
    ins[name]++
    if ($0 ~ /CALL/) call[name]++
    if ($0 ~ /MUFU/) mufu[name]++
    if ($0 ~ / STL/) stl[name]++
    if ($0 ~ / LDG/) ldg[name]++
  }
  END {
    printf "%7s %5s %5s %5s %5s  %s\n", "instr", "calls", "mufu", "stl", "ldg", "kernel (mangled)"
    for (i = 1; i <= n; ++i) {
      k = order[i]
      printf "%7d %5d %5d %5d %5d  %s\n", ins[k], call[k], mufu[k], stl[k], ldg[k], k
    }
  }' "$work/k.sass"

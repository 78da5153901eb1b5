#!/usr/bin/env bash
# The CUDA backend run end to end without a GPU: built in build-emu/ against hostcuda, the CUDA
# runtime emulated on the host (DT_ENABLE_CUDA=EMULATE, tests/hostcuda/), then the checks of
# tests/emulated/CMakeLists.txt, label emulated, one a core (emulation runs on one). Emulation says
# nothing of speed, of the GPU's memory model or of its float atomics' order: a GPU still decides.
# --asan: under AddressSanitizer and UBSan (build-emu-asan/), but the checks labelled noasan (~6x
# slower there): a kernel reading or writing past a device allocation, or host code touching
# device memory outside a kernel or a copy (it is poisoned there), is reported where it happens:
# compute-sanitizer's memcheck, without a GPU. Further arguments go to ctest (-R matrix, -j 1).
#   scripts/emulate.sh [--asan] [CTEST ARGUMENTS...]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/kit/contents.sh  # the GPU kit's targets: the benches, detrain, the test binaries
build=build-emu skip=() targets=(dt_test_hostcuda "${kit_targets[@]}")
flags=(-DCMAKE_BUILD_TYPE=Release -DDT_BUILD_BENCH=ON)
if [[ ${1:-} == --asan ]]; then
  shift
  build=build-emu-asan skip=(-LE noasan) targets=(detrain dt_test_{hostcuda,cuda,device_ops})
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DDT_BUILD_BENCH=OFF "-DCMAKE_CXX_FLAGS=\
-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer")
  export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
fi
mkdir -p "$build"
cmake -S . -B "$build" -G Ninja "${flags[@]}" -DDT_ENABLE_CUDA=EMULATE >"$build/configure.log" \
  2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
if ctest --test-dir "$build" -L emulated "${skip[@]}" -j "$(nproc)" --output-on-failure "$@"; then
  echo "emulate: every check passed"
else
  echo "emulate: FAILED (ctest's list above)"
  exit 1
fi

#!/usr/bin/env bash
# Builds the GPU kit here (no GPU needed): detrain, the tests that use a device and the GPU
# benches, for the lent GPUs (Hopper: sm_90, plus compute_90 PTX for newer chips; the CUDA runtime
# static, no MPI), with the shared libraries a GPU host may lack, a Fashion-MNIST slice and the cpu
# side of the CPU-vs-GPU hash pairs (scripts/kit/contents.sh), in gpu-kit/ (or KIT_DIR), packed
# beside it into gpu-kit.tar.xz (what travels; under 48 MiB for the device tool's 64). Built in
# GPU_BUILD_DIR (build-gpu/); data from DT_FASHION_MNIST. scripts/gpu_check.sh runs it on a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/kit/contents.sh
kit=${KIT_DIR:-gpu-kit}
build=${GPU_BUILD_DIR:-build-gpu}

gen=()
if command -v ninja >/dev/null && [[ ! -f "$build/CMakeCache.txt" ]]; then gen=(-G Ninja); fi
# libstdc++ linked statically (a GPU host's may be older than g++ 12's), with an arc4random of our
# own: its std::random_device, which every program links, calls glibc 2.36's; this one reads the
# same kernel entropy through getentropy (glibc 2.25, which retries an interrupted getrandom).
# libgcc_s stays dynamic (every Linux has it; linked statically its unwinder would need glibc
# 2.35). So the kit asks glibc 2.34 at most: RHEL 9, Amazon Linux 2023, Ubuntu 22.04 and newer.
mkdir -p "$build"
compat="$(cd "$build" && pwd)/arc4random_compat.o"  # (absolute: the link runs in $build)
cc -O2 -x c -c -o "$compat" - <<'C'
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
uint32_t arc4random(void) { uint32_t v; if (getentropy(&v, sizeof v) != 0) abort(); return v; }
C
cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DDT_ENABLE_CUDA=ON \
      "-DCMAKE_CUDA_ARCHITECTURES=90-real;90-virtual" -DDT_BUILD_BENCH=ON -DDT_ENABLE_MPI=OFF \
      "-DCMAKE_EXE_LINKER_FLAGS=-static-libstdc++ $compat" >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${kit_targets[@]}"
# Every compile of the kit with the flags that fix float order (--fmad=false: the CPU's bits).
python3 tests/e2e/numeric_flags_test.py "$build"

rm -rf "$kit"
mkdir -p "$kit/bin" "$kit/lib"
for b in "${kit_binaries[@]}"; do cp "$build/$b" "$kit/bin/"; done
# Without their host symbol tables (1.5 MiB each; the CUDA code and the kernels' registered names
# are data the runtime reads, not symbols). Then the shared libraries outside glibc and libgcc_s
# that they load (libgomp, zlib), beside them.
strip "$kit"/bin/*
ldd "$kit"/bin/* | awk '/=> \//{print $3}' | sort -u |
    grep -Ev '/(libc|libm|libpthread|libdl|librt|libgcc_s|ld-linux[^/]*)\.so' |
    xargs -r cp -L -t "$kit/lib/"
kit_fill "$kit" "${DT_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}"
# The newest glibc symbol version the kit imports: gpu_check.sh compares it with the host's first,
# and it is a contract (docs/gpu.md): a new import past 2.34 fails here, in CI.
objdump -T "$kit"/bin/* "$kit"/lib/* | grep -o 'GLIBC_2\.[0-9]*' | sort -V -u | tail -1 |
    sed 's/GLIBC_//' > "$kit/GLIBC"
# Packed: the folder's contents, so that it unpacks into whatever folder KIT_DIR names there.
tar -C "$kit" -cf - . | xz -T0 -6 > "$kit.tar.xz"
packed=$(( ($(stat -c %s "$kit.tar.xz") + 1048575) / 1048576 ))
echo "gpu_kit.sh: $kit is $(du -sm "$kit" | cut -f1) MiB, $kit.tar.xz $packed MiB (commit" \
     "$(cat "$kit/COMMIT"), needs glibc $(cat "$kit/GLIBC"); the cpu sides of $kit_runs)"
if [[ $(printf '%s\n' "$(cat "$kit/GLIBC")" 2.34 | sort -V | tail -1) != 2.34 ]]; then
    echo "gpu_kit.sh: the kit imports glibc $(cat "$kit/GLIBC") symbols (at most 2.34 wanted:" \
         "objdump -T $kit/bin/* | grep GLIBC_2.3 names them)" >&2
    exit 1
fi
if (( packed >= 48 )); then
    echo "gpu_kit.sh: the packed kit must stay well under 64 MiB (the device tool's limit)" >&2
    exit 1
fi

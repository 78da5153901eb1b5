#!/usr/bin/env bash
# Builds the GPU kit on this machine (no GPU needed): detrain and the tests that use a device,
# compiled for the lent GPUs (Hopper, sm_90 plus compute_90 PTX for newer chips), with the few
# shared libraries a GPU host may lack, a small Fashion-MNIST subset (the CPU-vs-GPU runs) and the
# cpu side of those runs (run here by the kit's detrain: the GPU host runs only the GPU side), into
# one ignored folder (default gpu-kit/, override with KIT_DIR), and packed into one ignored file
# beside it (gpu-kit.tar.xz: what travels to a GPU host, kept well under the device tool's 64 MiB;
# unpacked, each of its binaries, scripts/kit/contents.sh, holds the CUDA kernels' machine code). Run
# scripts/gpu_check.sh from the repository root on the GPU host (docs/gpu.md says how): it unpacks
# the packed kit when the folder is not there.
#   scripts/gpu_kit.sh            # build into build-gpu/, assemble gpu-kit/, pack gpu-kit.tar.xz
# CUDA runtime: linked statically (cmake: CUDA::cudart_static), so the host needs only a driver;
# no MPI (the GPU checks run single-process), so no MPI libraries to carry.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/kit/contents.sh
kit=${KIT_DIR:-gpu-kit}
build=${GPU_BUILD_DIR:-build-gpu}
data_src=${DT_FASHION_MNIST:-/usr/share/datasets/fashion-mnist}

gen=()
if command -v ninja >/dev/null && [[ ! -f "$build/CMakeCache.txt" ]]; then gen=(-G Ninja); fi
# libstdc++ linked statically (a GPU host's may be older than g++ 12's), with an arc4random of our
# own (scripts/kit/arc4random_compat.c: libstdc++'s would need glibc 2.36); libgcc_s stays
# dynamic (every Linux has it; linked statically its unwinder would need glibc 2.35). So the kit
# asks glibc 2.34 at most: RHEL 9, Amazon Linux 2023, Ubuntu 22.04 and newer.
mkdir -p "$build"
compat="$(cd "$build" && pwd)/arc4random_compat.o"  # (absolute: the link runs in $build)
cc -O2 -c scripts/kit/arc4random_compat.c -o "$compat"
cmake -S . -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DDT_ENABLE_CUDA=ON \
      "-DCMAKE_CUDA_ARCHITECTURES=90-real;90-virtual" -DDT_BUILD_BENCH=ON -DDT_ENABLE_MPI=OFF \
      "-DCMAKE_EXE_LINKER_FLAGS=-static-libstdc++ $compat" >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${kit_targets[@]}"
# Every compile of the kit with the flags that fix float order (--fmad=false: the CPU's bits).
python3 tests/e2e/numeric_flags_test.py "$build"

rm -rf "$kit"
mkdir -p "$kit/bin" "$kit/lib" "$kit/data/fashion-mnist"
for b in "${kit_binaries[@]}"; do cp "$build/$b" "$kit/bin/"; done
# Without their host symbol tables (1.5 MiB each; the CUDA code and the kernels' registered names
# are data the runtime reads, not symbols): the unpacked kit stays well under 64 MiB.
strip "$kit"/bin/*
# Shared libraries outside glibc and libgcc_s that the binaries load (libgomp, zlib): copied
# beside them.
for lib in $(ldd "$kit"/bin/* | awk '/=> \//{print $3}' | sort -u); do
    case "$(basename "$lib")" in
        libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libgcc_s.so*) ;;
        *) cp -L "$lib" "$kit/lib/" ;;
    esac
done
# Fashion-MNIST subset: the first 2048 training and 1000 test images, uncompressed IDX.
python3 scripts/kit/fashion_mnist_slice.py "$data_src" "$kit/data/fashion-mnist"
# The cpu side of every CPU-vs-GPU hash pair (scripts/kit/contents.sh): KIT/cpu/.
kit_cpu_results "$kit"
# The newest glibc symbol version the kit imports (2.34: see the link flags above):
# gpu_check.sh compares it with the host's glibc first.
objdump -T "$kit"/bin/* "$kit"/lib/* | grep -o 'GLIBC_2\.[0-9]*' | sort -V -u | tail -1 |
    sed 's/GLIBC_//' > "$kit/GLIBC"
kit_write_commit "$kit"
# Packed: the folder's contents, so that it unpacks into whatever folder KIT_DIR names there.
rm -f "$kit.tar.xz"
tar -C "$kit" -cf - . | xz -T0 -6 > "$kit.tar.xz"
size=$(du -sm "$kit" | cut -f1)
packed=$(( ($(stat -c %s "$kit.tar.xz") + 1048575) / 1048576 ))
echo "gpu_kit.sh: $kit is ${size} MiB, $kit.tar.xz ${packed} MiB (commit $(cat "$kit/COMMIT")," \
     "needs glibc $(cat "$kit/GLIBC"); the cpu sides of $kit_runs)"
# The glibc the kit asks is a contract (docs/gpu.md): a new import past 2.34 fails here, in CI.
if [[ $(printf '%s\n' "$(cat "$kit/GLIBC")" 2.34 | sort -V | tail -1) != 2.34 ]]; then
    echo "gpu_kit.sh: the kit imports glibc $(cat "$kit/GLIBC") symbols (at most 2.34 wanted:" \
         "objdump -T $kit/bin/* | grep GLIBC_2.3 names them)" >&2
    exit 1
fi
if (( packed >= 48 )); then
    echo "gpu_kit.sh: the packed kit must stay well under 64 MiB (the device tool's limit)" >&2
    exit 1
fi

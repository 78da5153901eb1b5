#!/usr/bin/env bash
# Builds and runs the test suite under sanitizers, each in a build directory of its own:
#   scripts/sanitize.sh asan   AddressSanitizer + UndefinedBehaviorSanitizer (g++), every test
#                              of the `fast` label (the suite CI runs), leaks checked at exit
#                              (the `mpi` tests with Open MPI's own leaks suppressed)
#   scripts/sanitize.sh tsan   ThreadSanitizer on the threaded code: the kernel, engine and
#                              MPI test binaries (the MPI one in a world of one), built with
#                              clang and LLVM's OpenMP runtime, whose Archer tool (libarcher)
#                              tells TSan about OpenMP's barriers and tasks (libgomp would
#                              show its own sync as races)
#   scripts/sanitize.sh tsan-grid  the same build, only the CUDA block programs run on the host
#                              (tests/kernels/cuda: every thread of a block a std::thread, its
#                              barriers real, two blocks at a time): a shared memory read that
#                              no barrier orders after its write, or two blocks writing one
#                              element without an atomic, is a reported race (CI runs it)
# Any sanitizer report fails the test that triggers it (halt_on_error), so a clean run is one
# whose tests pass. Extra arguments go to ctest (asan, e.g. -R Gemm) or to the test binaries
# (tsan, e.g. --gtest_filter='Gemm.*'). Run before every release-worthy change (README).
set -euo pipefail
kind=${1:?usage: scripts/sanitize.sh asan|tsan|tsan-grid [ctest args...]}
shift
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-${kind%-grid}  # tsan-grid shares the tsan build
mkdir -p "$build"
common=(-S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDT_BUILD_BENCH=OFF
        -DDT_ENABLE_CUDA=OFF)
case $kind in
  asan)
    cmake "${common[@]}" -DCMAKE_CXX_COMPILER=g++ \
      -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-sanitize-recover=undefined \
-fno-omit-frame-pointer" \
      >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
    cmake --build "$build" -j2
    asan=detect_leaks=1:halt_on_error=1:abort_on_error=1:strict_string_checks=1
    export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
    ASAN_OPTIONS=$asan ctest --test-dir "$build" -L fast -LE mpi -j2 --output-on-failure "$@"
    # The processes of an mpirun: Open MPI's own never-freed allocations are suppressed by
    # library (scripts/lsan_mpi.supp), which needs whole allocation stacks (the slow unwinder).
    ASAN_OPTIONS=$asan:fast_unwind_on_malloc=0 \
        LSAN_OPTIONS=suppressions=$root/scripts/lsan_mpi.supp \
        ctest --test-dir "$build" -L mpi -j2 --output-on-failure "$@"
    ;;
  tsan | tsan-grid)
    archer=$(ls /usr/lib/llvm-14/lib/libarcher.so 2>/dev/null || true)
    [ -n "$archer" ] || {
      echo "sanitize: libarcher.so is missing (scripts/setup.sh --checks)"
      exit 1
    }
    cmake "${common[@]}" -DCMAKE_CXX_COMPILER=clang++-14 \
      -DCMAKE_CXX_FLAGS="-fsanitize=thread -fno-omit-frame-pointer" \
      >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
    tests=(dt_test_common dt_test_kernels dt_test_engine dt_test_device_ops)
    # With MPI: the gradient buckets' communication thread, in a world of one (no mpirun).
    if [[ $kind == tsan ]] && grep -q "detrain: MPI ON" "$build/configure.log"; then
      tests+=(dt_test_mpi)
    fi
    filter=()
    if [[ $kind == tsan-grid ]]; then
      # The suites of tests/kernels/cuda are named Cuda* (scripts/lint.sh checks it).
      tests=(dt_test_kernels)
      filter=(--gtest_filter='Cuda*')
    fi
    cmake --build "$build" -j2 --target "${tests[@]}"
    export OMP_TOOL_LIBRARIES=$archer
    export TSAN_OPTIONS="halt_on_error=1 ignore_noninstrumented_modules=1 history_size=4"
    export ARCHER_OPTIONS="verbose=0"
    export OMP_NUM_THREADS=2
    for t in "${tests[@]}"; do
      echo "sanitize: $kind $t"
      "$build/tests/$t" "${filter[@]}" "$@"
    done
    ;;
  *) echo "sanitize: unknown kind '$kind' (asan, tsan or tsan-grid)"; exit 2 ;;
esac

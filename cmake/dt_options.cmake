# Build options and the numeric flags every detrain target compiles with.
# ORDER: floating-point evaluation order is part of detrain's specification, so the compiler may
# neither contract a*b+c into an fma (-ffp-contract=off) nor reassociate (no -ffast-math/-Ofast).
# Where a fused multiply-add is wanted, kernels call fma() explicitly. -fno-math-errno only stops
# sqrt from setting errno (its result is correctly rounded either way), so sqrt loops vectorise.
option(DT_BUILD_TESTS "Build the GoogleTest suite" ON)
option(DT_BUILD_BENCH "Build the Google Benchmark suite" ON)
option(DT_WERROR "Treat warnings as errors" OFF)
option(DT_FUZZ "Build the libFuzzer targets of tests/fuzz (clang; see scripts/fuzz.sh)" OFF)
set(DT_ENABLE_CUDA "AUTO" CACHE STRING
    "Compile the CUDA backend: AUTO (if nvcc is found), ON, OFF, EMULATE (on the host: hostcuda)")
set_property(CACHE DT_ENABLE_CUDA PROPERTY STRINGS AUTO ON OFF EMULATE)

add_library(dt_numeric_flags INTERFACE)
target_compile_options(dt_numeric_flags INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off -fno-fast-math -fno-math-errno>
  $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false -Xcompiler=-ffp-contract=off>)

# Release: -O3 without -march=native, so one binary gives the same bits on every x86-64 host;
# vector width is chosen at run time by kernels that ask for it (target_clones), never by flags.
set(CMAKE_CXX_FLAGS_RELEASE "-O3 -DNDEBUG" CACHE STRING "" FORCE)

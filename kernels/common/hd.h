// SPDX-License-Identifier: MIT
// DT_HD marks functions of the shared numeric core as callable from host and device code.
// Rules for everything in kernels/common/: header-only, POD structs and fixed-width integers, no
// exceptions, no STL containers, no libm transcendentals; only + - * / sqrt and explicit fma.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define DT_HD __host__ __device__ __forceinline__
#else
#define DT_HD inline
#endif

namespace dt::kernels::common {

DT_HD int popcount64(uint64_t x) {
#if defined(__CUDA_ARCH__)
    return __popcll(x);
#else
    return __builtin_popcountll(x);
#endif
}

/// Number of trailing one bits of x (0 for even x).
DT_HD int trailing_ones64(uint64_t x) {
    if (~x == 0) return 64;
#if defined(__CUDA_ARCH__)
    return __ffsll(static_cast<long long>(~x)) - 1;
#else
    return __builtin_ctzll(~x);
#endif
}

}  // namespace dt::kernels::common

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

// DT_UNROLL before a loop of a constant trip count: unrolled in device code, so that arrays it
// indexes stay in registers (host compilers would warn of an unknown pragma).
#if defined(__CUDA_ARCH__)
#define DT_UNROLL _Pragma("unroll")
#else
#define DT_UNROLL
#endif
// DT_NO_UNROLL before a loop whose body is long and rarely run: one copy of it in device code.
#if defined(__CUDA_ARCH__)
#define DT_NO_UNROLL _Pragma("unroll 1")
#else
#define DT_NO_UNROLL
#endif

namespace dt::kernels::common {

DT_HD int popcount64(uint64_t x) {
#if defined(__CUDA_ARCH__)
    return __popcll(x);
#else
    return __builtin_popcountll(x);
#endif
}

/// The bits of a float and back (bit casts valid on host and device).
DT_HD uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    return __builtin_bit_cast(uint32_t, f);
#endif
}

DT_HD float bits_to_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    return __builtin_bit_cast(float, u);
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

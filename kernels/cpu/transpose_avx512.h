// SPDX-License-Identifier: MIT
// Float transposes in AVX-512 registers (4 x 4 per 128-bit lane, 16 x 16), shared by several
// kernels, hence here and not in a kernel's folder: the GEMM's packing and narrow-edge kernel
// (kernels/cpu/gemm/gemm_pack_panels.h, gemm_microkernels.h) and the convolution's sample
// chunks (kernels/cpu/conv2d/conv2d_sample_chunks.cpp). Values move only: no ORDER here.
#pragma once
#if defined(__x86_64__)
#include <immintrin.h>

namespace dt::kernels::cpu {

/// The 4 x 4 block of each 128-bit lane l of x[0..3] transposed: y[q] lane l holds element
/// 4l + q of x[0], x[1], x[2], x[3] (32-bit, then 64-bit interleaves). Its own inverse. (The
/// zero-masked forms with every lane on are the plain shuffles; the unmasked intrinsics trip
/// GCC 12's -Wmaybe-uninitialized on their undefined pass-through.)
__attribute__((target("avx512f"), always_inline)) inline void transpose_lanes4(
    const __m512* x, __m512* y) {
    constexpr __mmask16 kAll = 0xFFFF;
    constexpr __mmask8 kAll8 = 0xFF;
    const __m512d t0 = _mm512_castps_pd(_mm512_maskz_unpacklo_ps(kAll, x[0], x[1]));
    const __m512d t1 = _mm512_castps_pd(_mm512_maskz_unpackhi_ps(kAll, x[0], x[1]));
    const __m512d t2 = _mm512_castps_pd(_mm512_maskz_unpacklo_ps(kAll, x[2], x[3]));
    const __m512d t3 = _mm512_castps_pd(_mm512_maskz_unpackhi_ps(kAll, x[2], x[3]));
    y[0] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(kAll8, t0, t2));
    y[1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(kAll8, t0, t2));
    y[2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(kAll8, t1, t3));
    y[3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(kAll8, t1, t3));
}

/// r[t] becomes column t of the 16 x 16 block r[0..15] (rows): the 4 x 4 blocks of each lane
/// (transpose_lanes4), then two 128-bit lane interleaves.
__attribute__((target("avx512f"))) inline void transpose16x16(__m512 r[16]) {
    constexpr __mmask16 kAll = 0xFFFF;
    __m512 u[16], v[16];
    for (int i = 0; i < 4; ++i) transpose_lanes4(r + 4 * i, u + 4 * i);
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 4; ++j) {
            v[8 * i + j] = _mm512_maskz_shuffle_f32x4(kAll, u[8 * i + j], u[8 * i + 4 + j], 0x88);
            v[8 * i + 4 + j] =
                _mm512_maskz_shuffle_f32x4(kAll, u[8 * i + j], u[8 * i + 4 + j], 0xdd);
        }
    for (int j = 0; j < 8; ++j) {
        r[j] = _mm512_maskz_shuffle_f32x4(kAll, v[j], v[8 + j], 0x88);
        r[8 + j] = _mm512_maskz_shuffle_f32x4(kAll, v[j], v[8 + j], 0xdd);
    }
}

}  // namespace dt::kernels::cpu
#endif

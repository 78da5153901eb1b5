// SPDX-License-Identifier: MIT
// A 16 x 16 float transpose in AVX-512 registers, shared by the packing routines of the GEMM
// (kernels/cpu/gemm_pack.h) and of the convolutions (kernels/cpu/conv2d_batched.cpp). Values
// move only.
#pragma once
#if defined(__x86_64__)
#include <immintrin.h>

namespace dt::kernels::cpu {

/// r[t] becomes column t of the 16 x 16 block r[0..15] (rows): 32-bit, 64-bit, then two 128-bit
/// lane interleaves. (The zero-masked forms with every lane on are the plain shuffles; the
/// unmasked intrinsics trip GCC 12's -Wmaybe-uninitialized on their undefined pass-through.)
__attribute__((target("avx512f"))) inline void transpose16x16(__m512 r[16]) {
    constexpr __mmask16 kAll = 0xFFFF;
    constexpr __mmask8 kAll8 = 0xFF;
    __m512 t[16], u[16], v[16];
    for (int i = 0; i < 8; ++i) {
        t[2 * i] = _mm512_maskz_unpacklo_ps(kAll, r[2 * i], r[2 * i + 1]);
        t[2 * i + 1] = _mm512_maskz_unpackhi_ps(kAll, r[2 * i], r[2 * i + 1]);
    }
    for (int i = 0; i < 4; ++i) {
        const __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
        const __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
        u[4 * i] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(kAll8, a, c));
        u[4 * i + 1] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(kAll8, a, c));
        u[4 * i + 2] = _mm512_castpd_ps(_mm512_maskz_unpacklo_pd(kAll8, b, d));
        u[4 * i + 3] = _mm512_castpd_ps(_mm512_maskz_unpackhi_pd(kAll8, b, d));
    }
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

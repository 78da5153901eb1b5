// SPDX-License-Identifier: MIT
// exact_add_rows / exact_sum_rows / exact_add_lanes / exact_add_columns (kernels/exact_rows.h):
// per block of elements, pass 1 finds each element's least and greatest leaf exponent, pass 2
// sums the shifted mantissas in int64 lanes (vectorised: variable 64-bit shifts), pass 3 folds
// each sum into its accumulator once (or rounds it to float directly), or adds the leaves one
// by one where pass 1 found them unfit.
#include "kernels/exact_rows.h"

#include <algorithm>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dt::kernels::cpu {

namespace {

constexpr int64_t kBlock = 256;            // elements per block (stack arrays below)
constexpr uint32_t kMaxBase = 200;         // p beyond this: plain path (keeps limb index safe)
constexpr uint32_t kNoLeaf = 0xffffffffu;  // "no nonzero leaf yet" for the least exponent

inline uint32_t bits_at(const float* x) {
    uint32_t u;
    std::memcpy(&u, x, sizeof u);
    return u;
}

/// Passes 1 and 2 over one block of m elements: lo/hi exponents, specials, int64 sums.
__attribute__((target_clones("avx512f", "avx2", "default"))) void block_sums_generic(
    const float* x, int64_t stride, int64_t count, int64_t m, uint32_t* lo, uint32_t* hi,
    uint32_t* special, int64_t* sum) {
    for (int64_t i = 0; i < m; ++i) lo[i] = kNoLeaf, hi[i] = 0, special[i] = 0, sum[i] = 0;
    for (int64_t j = 0; j < count; ++j) {
        const float* row = x + j * stride;
        for (int64_t i = 0; i < m; ++i) {
            const uint32_t u = bits_at(row + i), e = (u >> 23) & 0xffu;
            const uint32_t p = e ? e - 1u : 0u;  // units of 2^-149: x = m * 2^p
            special[i] |= static_cast<uint32_t>(e == 0xffu);
            lo[i] = (u & 0x7fffffffu) ? std::min(lo[i], p) : lo[i];
            hi[i] = std::max(hi[i], p);
        }
    }
    for (int64_t j = 0; j < count; ++j) {
        const float* row = x + j * stride;
        for (int64_t i = 0; i < m; ++i) {
            const uint32_t u = bits_at(row + i), e = (u >> 23) & 0xffu;
            const uint32_t p = e ? e - 1u : 0u;
            const uint64_t mant = (u & 0x7fffffu) | (e ? 0x800000u : 0u);
            // Zero leaves (p may be below lo) add 0; unfit elements' sums are never used, the
            // clamp only keeps the shift defined.
            const uint32_t sh = std::min(p >= lo[i] ? p - lo[i] : 0u, 63u);
            // Unsigned (modular) arithmetic: an unfit element's sum may wrap, a fit one's never
            // leaves the int64 range, so its two's-complement reading is the exact sum.
            const uint64_t v = mant << sh, neg = 0u - static_cast<uint64_t>(u >> 31);
            sum[i] = static_cast<int64_t>(static_cast<uint64_t>(sum[i]) + ((v ^ neg) - neg));
        }
    }
}

#if defined(__x86_64__)
// GCC 12 reports its own _mm512_undefined_* placeholders inside the intrinsics' headers as
// maybe-uninitialized at -O3; nothing here reads an undefined value.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/// block_sums_generic for 16 elements at a time in AVX-512 registers: both passes keep the
/// lanes' state in registers while walking down the rows (the generic loops reload it per row).
/// Integer arithmetic only: the same lo, hi, special and sums as the generic code.
__attribute__((target("avx512f"))) void block_sums_avx512(const float* x, int64_t stride,
                                                         int64_t count, int64_t m, uint32_t* lo,
                                                         uint32_t* hi, uint32_t* special,
                                                         int64_t* sum) {
    const int64_t full = m - m % 16;
    const __m512i ff = _mm512_set1_epi32(0xff), one = _mm512_set1_epi32(1);
    const __m512i man = _mm512_set1_epi32(0x7fffff), abs = _mm512_set1_epi32(0x7fffffff);
    const __m512i imp = _mm512_set1_epi32(0x800000), c63 = _mm512_set1_epi64(63);
    for (int64_t i = 0; i < full; i += 16) {
        __m512i l = _mm512_set1_epi32(static_cast<int>(kNoLeaf)), h = _mm512_setzero_si512();
        __mmask16 sp = 0;
        for (int64_t j = 0; j < count; ++j) {
            const __m512i u = _mm512_loadu_si512(x + j * stride + i);
            const __m512i e = _mm512_and_si512(_mm512_srli_epi32(u, 23), ff);
            const __m512i p = _mm512_sub_epi32(_mm512_max_epu32(e, one), one);  // e ? e - 1 : 0
            sp |= _mm512_cmpeq_epi32_mask(e, ff);
            const __mmask16 nz = _mm512_test_epi32_mask(u, abs);
            l = _mm512_mask_min_epu32(l, nz, l, p);
            h = _mm512_max_epu32(h, p);
        }
        _mm512_storeu_si512(lo + i, l);
        _mm512_storeu_si512(hi + i, h);
        _mm512_storeu_si512(special + i, _mm512_maskz_mov_epi32(sp, one));
        __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
        const __m512i l0 = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(l));
        const __m512i l1 = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(l, 1));
        for (int64_t j = 0; j < count; ++j) {
            const __m512i u = _mm512_loadu_si512(x + j * stride + i);
            const __m512i e = _mm512_and_si512(_mm512_srli_epi32(u, 23), ff);
            const __m512i p = _mm512_sub_epi32(_mm512_max_epu32(e, one), one);
            const __mmask16 normal = _mm512_test_epi32_mask(e, ff);
            const __m512i mt = _mm512_mask_or_epi32(_mm512_and_si512(u, man), normal,
                                                    _mm512_and_si512(u, man), imp);
            const __mmask16 neg = _mm512_cmplt_epi32_mask(u, _mm512_setzero_si512());
            // Shift p - lo, clamped to [0, 63] as in the generic code (zero leaves add 0).
            const __m512i p0 = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(p));
            const __m512i p1 = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(p, 1));
            const __m512i sh0 = _mm512_min_epu64(
                _mm512_maskz_sub_epi64(_mm512_cmpge_epu64_mask(p0, l0), p0, l0), c63);
            const __m512i sh1 = _mm512_min_epu64(
                _mm512_maskz_sub_epi64(_mm512_cmpge_epu64_mask(p1, l1), p1, l1), c63);
            const __m512i v0 =
                _mm512_sllv_epi64(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(mt)), sh0);
            const __m512i v1 =
                _mm512_sllv_epi64(_mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(mt, 1)), sh1);
            s0 = _mm512_mask_sub_epi64(_mm512_add_epi64(s0, v0), static_cast<__mmask8>(neg), s0,
                                       v0);
            s1 = _mm512_mask_sub_epi64(_mm512_add_epi64(s1, v1),
                                       static_cast<__mmask8>(neg >> 8), s1, v1);
        }
        _mm512_storeu_si512(sum + i, s0);
        _mm512_storeu_si512(sum + i + 8, s1);
    }
    if (full < m)
        block_sums_generic(x + full, stride, count, m - full, lo + full, hi + full,
                           special + full, sum + full);
}
#pragma GCC diagnostic pop
#endif

void block_sums(const float* x, int64_t stride, int64_t count, int64_t m, uint32_t* lo,
                uint32_t* hi, uint32_t* special, int64_t* sum) {
#if defined(__x86_64__)
    static const bool avx512 = __builtin_cpu_supports("avx512f");
    if (avx512) return block_sums_avx512(x, stride, count, m, lo, hi, special, sum);
#endif
    block_sums_generic(x, stride, count, m, lo, hi, special, sum);
}

/// sum * 2^(lo - 149) rounded once, when that is a normal float: (float)sum rounds to 24 bits
/// (RNE, as exact_value), the power of two then only moves the exponent. False otherwise.
inline bool scaled_int_to_float(int64_t sum, uint32_t lo, float* out) {
    const float f = static_cast<float>(sum);  // ORDER: the one rounding
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    const int64_t e = static_cast<int64_t>((u >> 23) & 0xffu) + static_cast<int64_t>(lo) - 149;
    if (e < 1 || e > 254) return false;  // subnormal or overflowing result: the ExactAcc path
    u = (u & 0x807fffffu) | (static_cast<uint32_t>(e) << 23);
    std::memcpy(out, &u, sizeof u);
    return true;
}

}  // namespace

void exact_sum_rows(float* out, const float* x, int64_t stride, int64_t count, int64_t n) {
    const uint32_t spread = exact_sum_rows_spread(count);
    uint32_t lo[kBlock], hi[kBlock], special[kBlock];
    int64_t sum[kBlock];
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
        const int64_t m = std::min(kBlock, n - i0);
        block_sums(x + i0, stride, count, m, lo, hi, special, sum);
        for (int64_t i = 0; i < m; ++i) {
            if (!special[i] && lo[i] == kNoLeaf) {  // zeros only: exact_value gives +0
                out[i0 + i] = 0.0f;
                continue;
            }
            const bool fit = !special[i] && hi[i] <= kMaxBase && hi[i] - lo[i] <= spread;
            if (fit && (sum[i] == 0 ? (out[i0 + i] = 0.0f, true)
                                    : scaled_int_to_float(sum[i], lo[i], out + i0 + i)))
                continue;
            common::ExactAcc a;
            common::exact_init(a);
            for (int64_t j = 0; j < count; ++j) common::exact_add(a, x[j * stride + i0 + i]);
            out[i0 + i] = common::exact_value(a);
        }
    }
}

void exact_add_lanes(common::ExactAcc& a, const float* x, int64_t n) {
    constexpr int64_t kLanes = 16, kRows = 1024;
    uint32_t lo[kLanes], hi[kLanes], special[kLanes];
    int64_t sum[kLanes];
    int64_t i = 0;
    while (n - i >= kLanes) {
        const int64_t rows = std::min(kRows, (n - i) / kLanes);
        const uint32_t spread = exact_sum_rows_spread(rows);
        block_sums(x + i, kLanes, rows, kLanes, lo, hi, special, sum);
        for (int64_t l = 0; l < kLanes; ++l) {
            if (!special[l] && lo[l] == kNoLeaf) continue;  // zeros only
            if (!special[l] && hi[l] <= kMaxBase && hi[l] - lo[l] <= spread) {
                const bool negative = sum[l] < 0;
                const uint64_t mag = negative ? 0u - static_cast<uint64_t>(sum[l])
                                              : static_cast<uint64_t>(sum[l]);
                if (mag != 0u) common::exact_fold_bin(a, mag, lo[l] + 1u, negative);
            } else {
                for (int64_t r = 0; r < rows; ++r) common::exact_add(a, x[i + r * kLanes + l]);
            }
        }
        common::exact_normalise(a);  // at most 16 * 1024 units added since the last one
        i += rows * kLanes;
    }
    for (; i < n; ++i) common::exact_add(a, x[i]);
    common::exact_normalise(a);
}

void exact_add_columns(common::ExactAcc& a, const float* x, int64_t stride, int64_t count,
                       int64_t n) {
    constexpr int64_t kRows = 1024;
    uint32_t lo[kBlock], hi[kBlock], special[kBlock];
    int64_t sum[kBlock];
    for (int64_t j0 = 0; j0 < count; j0 += kRows) {
        const int64_t rows = std::min(kRows, count - j0);
        const uint32_t spread = exact_sum_rows_spread(rows);
        const float* xr = x + j0 * stride;
        for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
            const int64_t m = std::min(kBlock, n - i0);
            block_sums(xr + i0, stride, rows, m, lo, hi, special, sum);
            for (int64_t i = 0; i < m; ++i) {
                if (!special[i] && lo[i] == kNoLeaf) continue;  // zeros only
                if (!special[i] && hi[i] <= kMaxBase && hi[i] - lo[i] <= spread) {
                    const bool negative = sum[i] < 0;
                    const uint64_t mag = negative ? 0u - static_cast<uint64_t>(sum[i])
                                                  : static_cast<uint64_t>(sum[i]);
                    if (mag != 0u) common::exact_fold_bin(a, mag, lo[i] + 1u, negative);
                } else {
                    for (int64_t j = 0; j < rows; ++j)
                        common::exact_add(a, xr[j * stride + i0 + i]);
                }
            }
            common::exact_normalise(a);  // at most 256 * 1024 units added since the last one
        }
    }
    common::exact_normalise(a);
}

void exact_add_rows(common::ExactAcc* acc, const float* x, int64_t stride, int64_t count,
                    int64_t n) {
    if (count > kExactRowsMaxCount) {
        for (int64_t j = 0; j < count; j += kExactRowsMaxCount)
            exact_add_rows(acc, x + j * stride, stride, std::min(kExactRowsMaxCount, count - j),
                           n);
        return;
    }
    uint32_t lo[kBlock], hi[kBlock], special[kBlock];
    int64_t sum[kBlock];
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
        const int64_t m = std::min(kBlock, n - i0);
        block_sums(x + i0, stride, count, m, lo, hi, special, sum);
        for (int64_t i = 0; i < m; ++i) {
            common::ExactAcc& a = acc[i0 + i];
            if (lo[i] == kNoLeaf && !special[i]) continue;  // only zeros: nothing to add
            const bool fit =
                !special[i] && hi[i] <= kMaxBase && hi[i] - lo[i] <= kExactRowsSpread;
            if (!fit) {
                for (int64_t j = 0; j < count; ++j) common::exact_add(a, x[j * stride + i0 + i]);
                continue;
            }
            const bool negative = sum[i] < 0;
            const uint64_t mag = negative ? 0u - static_cast<uint64_t>(sum[i])
                                          : static_cast<uint64_t>(sum[i]);
            if (mag != 0u) common::exact_fold_bin(a, mag, lo[i] + 1u, negative);
        }
    }
}

}  // namespace dt::kernels::cpu

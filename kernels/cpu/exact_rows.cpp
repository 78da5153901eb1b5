// SPDX-License-Identifier: MIT
// exact_add_rows / exact_sum_rows / exact_add_lanes / exact_add_columns (kernels/exact_rows.h):
// per block of elements, pass 1 finds each element's exponent range and its int64 base, pass 2
// sums the terms' integer values at or above the base in int64 lanes (AVX-512: x scaled by
// 2^(149 - base) and converted, where no lane has terms below its base; else variable 64-bit
// shifts of the mantissas), then each sum is folded into its accumulator once (or rounded to
// float directly) and the few terms below the base are added one by one (all terms, for Inf/NaN
// or huge values).
#include "kernels/exact_rows.h"

#include <algorithm>
#include <cstring>

#include "kernels/cpu/isa_variants.h"

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

/// Per-element results of the two passes over a block (kBlock elements at most).
struct BlockSums {
    uint32_t base[kBlock];     // max(least nonzero p, greatest p - spread); kNoLeaf: all zero
    uint32_t hi[kBlock];       // greatest p
    uint32_t special[kBlock];  // 1: an Inf or NaN among the element's terms
    uint32_t below[kBlock];    // nonzero terms with p < base: left out of sum
    int64_t sum[kBlock];       // sum of +-m << (p - base) over the terms with p >= base
};

/// Pass 1 finds each element's exponent range, pass 2 sums its terms at p >= base in an int64
/// (terms < 2^(24 + spread), count of them: the caller's spread keeps the sum below 2^62) and
/// counts the nonzero ones below base, which the caller adds one by one (outliers: a few tiny
/// terms no longer send the whole element to the slow path).
DT_ISA_BODY void block_sums_generic_body(const float* x, int64_t stride, int64_t count,
                                         int64_t m, uint32_t spread, BlockSums& b, int64_t off) {
    for (int64_t i = 0; i < m; ++i) {
        b.base[off + i] = kNoLeaf, b.hi[off + i] = 0, b.special[off + i] = 0;
        b.below[off + i] = 0, b.sum[off + i] = 0;
    }
    for (int64_t j = 0; j < count; ++j) {
        const float* row = x + j * stride;
        for (int64_t i = 0; i < m; ++i) {
            const uint32_t u = bits_at(row + i), e = (u >> 23) & 0xffu;
            const uint32_t p = e ? e - 1u : 0u;  // units of 2^-149: x = m * 2^p
            b.special[off + i] |= static_cast<uint32_t>(e == 0xffu);
            b.base[off + i] = (u & 0x7fffffffu) ? std::min(b.base[off + i], p) : b.base[off + i];
            b.hi[off + i] = std::max(b.hi[off + i], p);
        }
    }
    for (int64_t i = 0; i < m; ++i)  // base = max(lo, hi - spread); stays kNoLeaf if all zero
        b.base[off + i] = std::max(b.base[off + i], std::max(b.hi[off + i], spread) - spread);
    for (int64_t j = 0; j < count; ++j) {
        const float* row = x + j * stride;
        for (int64_t i = 0; i < m; ++i) {
            const uint32_t u = bits_at(row + i), e = (u >> 23) & 0xffu;
            const uint32_t p = e ? e - 1u : 0u, base = b.base[off + i];
            const uint64_t mant = (u & 0x7fffffu) | (e ? 0x800000u : 0u);
            const bool in = p >= base;
            b.below[off + i] += static_cast<uint32_t>(!in && (u & 0x7fffffffu) != 0u);
            // p - base <= spread when in; Inf/NaN or huge elements' sums are never used, the
            // clamp only keeps the shift defined. Unsigned (modular) arithmetic: a used sum
            // never leaves the int64 range, so its two's-complement reading is exact.
            const uint64_t v = in ? mant << std::min(p - base, 63u) : 0u;
            const uint64_t neg = 0u - static_cast<uint64_t>(u >> 31);
            b.sum[off + i] =
                static_cast<int64_t>(static_cast<uint64_t>(b.sum[off + i]) + ((v ^ neg) - neg));
        }
    }
}
DT_ISA_VARIANTS(void, block_sums_generic,
                (const float* x, int64_t stride, int64_t count, int64_t m, uint32_t spread,
                 BlockSums& b, int64_t off),
                (x, stride, count, m, spread, b, off))

#if defined(__x86_64__)
// GCC 12 reports its own _mm512_undefined_* placeholders inside the intrinsics' headers as
// maybe-uninitialized at -O3; nothing here reads an undefined value.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/// p = e ? e - 1 : 0 per lane, e the exponent field of |x|'s bits.
__attribute__((target("avx512f"), always_inline)) inline __m512i p_of(__m512i bits) {
    const __m512i e = _mm512_srli_epi32(bits, 23), one = _mm512_set1_epi32(1);
    return _mm512_sub_epi32(_mm512_max_epu32(e, one), one);
}

/// block_sums_generic for 16 elements at a time in AVX-512 registers: both passes keep the
/// lanes' state in registers while walking down the rows (the generic loops reload it per row).
/// Pass 1 tracks the greatest and the least nonzero |x| as integers (the bit patterns of
/// non-negative floats order like their values; Inf/NaN are the greatest). Pass 2, when no lane
/// has terms below its base (the usual case), takes each term's integer value m << (p - base)
/// as x * 2^(149 - base): a power-of-two scaling of an integer-valued result below 2^62, so
/// exact, and its conversion to int64 is exact too. Otherwise the shifts of the generic code.
/// Integer results either way: the same as the generic code's.
__attribute__((target("avx512f,avx512dq"))) void block_sums_avx512(const float* x,
                                                                  int64_t stride, int64_t count,
                                                                  int64_t m, uint32_t spread,
                                                                  BlockSums& b) {
    const int64_t full = m - m % 16;
    const __m512i ff = _mm512_set1_epi32(0xff), one = _mm512_set1_epi32(1);
    const __m512i man = _mm512_set1_epi32(0x7fffff), abs = _mm512_set1_epi32(0x7fffffff);
    const __m512i imp = _mm512_set1_epi32(0x800000), sp32 = _mm512_set1_epi32(int(spread));
    const __m512i none = _mm512_set1_epi32(static_cast<int>(kNoLeaf));
    for (int64_t i = 0; i < full; i += 16) {
        __m512i lo = none, hi = _mm512_setzero_si512();  // least nonzero / greatest |x| bits
        for (int64_t j = 0; j < count; ++j) {
            const __m512i a = _mm512_and_si512(_mm512_loadu_si512(x + j * stride + i), abs);
            hi = _mm512_max_epu32(hi, a);
            lo = _mm512_mask_min_epu32(lo, _mm512_test_epi32_mask(a, a), lo, a);
        }
        const __mmask16 any = _mm512_cmpneq_epi32_mask(lo, none);
        const __m512i h = p_of(hi), l = _mm512_mask_mov_epi32(none, any, p_of(lo));
        const __mmask16 sp = _mm512_cmpeq_epi32_mask(_mm512_srli_epi32(hi, 23), ff);
        const __m512i base = _mm512_max_epu32(l, _mm512_sub_epi32(_mm512_max_epu32(h, sp32), sp32));
        _mm512_storeu_si512(b.base + i, base);
        _mm512_storeu_si512(b.hi + i, h);
        _mm512_storeu_si512(b.special + i, _mm512_maskz_mov_epi32(sp, one));
        __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
        // No lane has terms below its base, nor subnormal terms (base 0): with normal inputs and
        // integer results >= 1, the MXCSR's flush-to-zero / denormals-are-zero cannot matter.
        if ((_mm512_cmpneq_epi32_mask(l, base) | _mm512_testn_epi32_mask(base, base)) == 0) {
            // 2^(149 - base) per lane (kNoLeaf lanes hold zeros only: any scale will do).
            const __m512 scale = _mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_set1_epi32(149), base));
            for (int64_t j = 0; j < count; ++j) {
                const __m512 v = _mm512_scalef_ps(_mm512_loadu_ps(x + j * stride + i), scale);
                s0 = _mm512_add_epi64(s0, _mm512_cvtps_epi64(_mm512_castps512_ps256(v)));
                s1 = _mm512_add_epi64(s1, _mm512_cvtps_epi64(_mm512_extractf32x8_ps(v, 1)));
            }
            _mm512_storeu_si512(b.below + i, _mm512_setzero_si512());
            _mm512_storeu_si512(b.sum + i, s0);
            _mm512_storeu_si512(b.sum + i + 8, s1);
            continue;
        }
        __m512i below = _mm512_setzero_si512();
        const __m512i l0 = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(base));
        const __m512i l1 = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(base, 1));
        for (int64_t j = 0; j < count; ++j) {
            const __m512i u = _mm512_loadu_si512(x + j * stride + i);
            const __m512i e = _mm512_and_si512(_mm512_srli_epi32(u, 23), ff);
            const __m512i p = _mm512_sub_epi32(_mm512_max_epu32(e, one), one);
            const __mmask16 normal = _mm512_test_epi32_mask(e, ff);
            const __m512i mt = _mm512_mask_or_epi32(_mm512_and_si512(u, man), normal,
                                                    _mm512_and_si512(u, man), imp);
            const __mmask16 neg = _mm512_cmplt_epi32_mask(u, _mm512_setzero_si512());
            const __mmask16 in = _mm512_cmpge_epu32_mask(p, base);
            below = _mm512_mask_add_epi32(below, _mm512_test_epi32_mask(u, abs) & ~in, below,
                                          one);
            const __mmask8 in0 = static_cast<__mmask8>(in), in1 = static_cast<__mmask8>(in >> 8);
            const __m512i p0 = _mm512_cvtepu32_epi64(_mm512_castsi512_si256(p));
            const __m512i p1 = _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(p, 1));
            const __m512i v0 = _mm512_maskz_sllv_epi64(
                in0, _mm512_cvtepu32_epi64(_mm512_castsi512_si256(mt)), _mm512_sub_epi64(p0, l0));
            const __m512i v1 = _mm512_maskz_sllv_epi64(
                in1, _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(mt, 1)),
                _mm512_sub_epi64(p1, l1));
            s0 = _mm512_mask_sub_epi64(_mm512_add_epi64(s0, v0), static_cast<__mmask8>(neg), s0,
                                       v0);
            s1 = _mm512_mask_sub_epi64(_mm512_add_epi64(s1, v1),
                                       static_cast<__mmask8>(neg >> 8), s1, v1);
        }
        _mm512_storeu_si512(b.below + i, below);
        _mm512_storeu_si512(b.sum + i, s0);
        _mm512_storeu_si512(b.sum + i + 8, s1);
    }
    if (full < m) block_sums_generic(x + full, stride, count, m - full, spread, b, full);
}
#pragma GCC diagnostic pop
#endif

/// The path in force (kernels/cpu_isa.h): AVX-512's own registers-resident passes, else the
/// generic loops compiled for the path.
IsaVariantUse block_sums_use("block_sums");
void block_sums(const float* x, int64_t stride, int64_t count, int64_t m, uint32_t spread,
                BlockSums& b) {
    const CpuIsa isa = cpu_isa();
    block_sums_use.took(isa);
#if defined(__x86_64__)
    if (isa == CpuIsa::kAvx512) return block_sums_avx512(x, stride, count, m, spread, b);
#endif
    block_sums_generic(x, stride, count, m, spread, b, 0);
}

/// a += every term of element i of block b exactly; col = its first term, terms `stride` apart.
/// At most `count` units.
inline void add_element(common::ExactAcc& a, const BlockSums& b, int64_t i, const float* col,
                        int64_t stride, int64_t count) {
    if (!b.special[i] && b.base[i] == kNoLeaf) return;  // zeros only
    // Plain path for Inf/NaN, huge terms, and elements with many outliers (wide exponents: a
    // scan for the outliers would cost more than adding every term).
    if (b.special[i] || b.hi[i] > kMaxBase || 4 * int64_t{b.below[i]} > count) {
        for (int64_t j = 0; j < count; ++j) common::exact_add(a, col[j * stride]);
        return;
    }
    const bool negative = b.sum[i] < 0;
    const uint64_t mag =
        negative ? 0u - static_cast<uint64_t>(b.sum[i]) : static_cast<uint64_t>(b.sum[i]);
    if (mag != 0u) common::exact_fold_bin(a, mag, b.base[i] + 1u, negative);
    if (b.below[i] == 0) return;
    for (int64_t j = 0; j < count; ++j) {  // the outliers below base
        const uint32_t u = bits_at(col + j * stride), e = (u >> 23) & 0xffu;
        if ((u & 0x7fffffffu) != 0u && (e ? e - 1u : 0u) < b.base[i])
            common::exact_add(a, col[j * stride]);
    }
}

/// sum * 2^(base - 149) rounded once, when that is a normal float: (float)sum rounds to 24 bits
/// (RNE, as exact_value), the power of two then only moves the exponent. False otherwise.
inline bool scaled_int_to_float(int64_t sum, uint32_t base, float* out) {
    const float f = static_cast<float>(sum);  // ORDER: the one rounding
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    const int64_t e = static_cast<int64_t>((u >> 23) & 0xffu) + static_cast<int64_t>(base) - 149;
    if (e < 1 || e > 254) return false;  // subnormal or overflowing result: the ExactAcc path
    u = (u & 0x807fffffu) | (static_cast<uint32_t>(e) << 23);
    std::memcpy(out, &u, sizeof u);
    return true;
}

}  // namespace

void exact_sum_rows(float* out, const float* x, int64_t stride, int64_t count, int64_t n) {
    const uint32_t spread = exact_sum_rows_spread(count);
    BlockSums b;
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
        const int64_t m = std::min(kBlock, n - i0);
        block_sums(x + i0, stride, count, m, spread, b);
        for (int64_t i = 0; i < m; ++i) {
            // whole: the int64 sum holds every term of the element.
            const bool whole = !b.special[i] && b.hi[i] <= kMaxBase && b.below[i] == 0;
            if (whole && (b.base[i] == kNoLeaf || b.sum[i] == 0)) {  // exact_value's +0
                out[i0 + i] = 0.0f;
                continue;
            }
            if (whole && scaled_int_to_float(b.sum[i], b.base[i], out + i0 + i)) continue;
            common::ExactAcc a;
            common::exact_init(a);
            add_element(a, b, i, x + i0 + i, stride, count);
            out[i0 + i] = common::exact_value(a);
        }
    }
}

void exact_add_lanes(common::ExactAcc& a, const float* x, int64_t n) {
    constexpr int64_t kLanes = 16;  // the array as rows of 16 columns, then the tail
    const int64_t rows = n / kLanes;
    exact_add_columns(a, x, kLanes, rows, kLanes);  // returns a normalised
    for (int64_t i = rows * kLanes; i < n; ++i) common::exact_add(a, x[i]);
    common::exact_normalise(a);
}

void exact_add_columns(common::ExactAcc& a, const float* x, int64_t stride, int64_t count,
                       int64_t n) {
    constexpr int64_t kRows = 1024;
    BlockSums b;
    for (int64_t j0 = 0; j0 < count; j0 += kRows) {
        const int64_t rows = std::min(kRows, count - j0);
        const float* xr = x + j0 * stride;
        for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
            const int64_t m = std::min(kBlock, n - i0);
            block_sums(xr + i0, stride, rows, m, exact_sum_rows_spread(rows), b);
            for (int64_t i = 0; i < m; ++i) add_element(a, b, i, xr + i0 + i, stride, rows);
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
    BlockSums b;
    for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
        const int64_t m = std::min(kBlock, n - i0);
        block_sums(x + i0, stride, count, m, exact_sum_rows_spread(count), b);
        for (int64_t i = 0; i < m; ++i) add_element(acc[i0 + i], b, i, x + i0 + i, stride, count);
    }
}

}  // namespace dt::kernels::cpu

// SPDX-License-Identifier: MIT
// The `exact` accumulation mode: a fixed-point superaccumulator for float32 sums. The result is
// the exact real sum of the inputs rounded ONCE to float32 (round to nearest, ties to even), so
// it does not depend on order, chunking, thread count or process count.
//
// Design. Every finite float32 is an integer multiple of 2^-149 below 2^128: with biased exponent
// E and 23 fraction bits f, x = m * 2^p * 2^-149 where m = f + (E ? 2^23 : 0) (24 bits) and
// p = max(E, 1) - 1 in [0, 253]. The accumulator holds sum(x) / 2^-149 as a signed integer in
// nine int64 limbs of 32-bit digits: value = sum_k limb[k] * 2^(32k) * 2^-149 (bits 0..287; the
// largest float needs bit 276). exact_add shifts m by p % 32 (<= 55 bits) and adds the low 32
// bits to limb[p / 32] and the high bits to limb[p / 32 + 1], negated for negative x: about ten
// integer ops and two adds, and one predictable branch (E = 0 or 255 take a slower path).
// Long arrays (exact_add_array, host) first sum mantissas in 64-bit bins per (sign, exponent)
// and fold the bins into the limbs at the end: see "long sums" below.
// ORDER: none. Everything is integer arithmetic until the single rounding in exact_value, so the
// result is independent of the order and grouping of adds and merges.
// Carries are deferred: one add changes a limb by less than 2^32, so a limb absorbs
// kExactHeadroom = 2^31 adds before it could overflow int64. Units: each exact_add counts 1, a
// normalised accumulator counts 1, an empty one 0, exact_merge adds the counts. Callers that may
// exceed 2^31 units call exact_normalise (carry propagation: limbs 0..7 become digits in
// [0, 2^32), limb 8 keeps the signed rest); exact_add_array does it for you. Beyond that the
// accumulator is exact while the total magnitude stays below 2^169 (> 2^40 terms of any size).
// Merging is limb-wise integer addition: associative and commutative, so partial accumulators
// from threads, chunks or ranks combine in any order with the same result; with integer atomics
// on the limbs (exact_atomic_merge, exact_atomic_add: one float, the two limbs it changes) many
// threads can add into one shared accumulator at once.
// Size: 80 bytes (9 limbs + special flags), one per output element in kernels.
//
// Rounding (exact_value): normalise a copy, take the magnitude, find its top bit t (in units of
// 2^-149). t < 24: the float's bit pattern IS the integer (subnormals and the least binade; no
// rounding can happen there, a nonzero exact sum is never below 2^-149). Otherwise keep the 24
// bits below t, round to nearest even using the next bit and a sticky bit, and build the bits
// ((t - 23) << 23) + mantissa, where a mantissa carry to 2^24 moves the exponent up by itself and
// a result at or beyond 2^128 becomes exactly the infinity pattern 0x7f800000.
//
// Special values (decided here, tested in tests/kernels/common/accum_exact_test.cpp):
//   any NaN input -> NaN (canonical quiet NaN 0x7fc00000); +inf and -inf both present -> NaN;
//   only one kind of infinity -> that infinity, whatever the finite part;
//   finite sums beyond the float range -> +-inf (RNE overflow: |sum| >= 2^128 - 2^103);
//   an exact zero -> +0.0f always, also for an empty sum and for a sum of only -0.0 inputs
//   (the sign of zero is not tracked; this matches sum_sequential, which starts from +0).
#pragma once
#include "kernels/common/hd.h"

namespace dt::kernels::common {

constexpr int kExactLimbs = 9;
constexpr int64_t kExactHeadroom = int64_t{1} << 31;  // units between normalisations, see above
constexpr uint32_t kExactPosInf = 1u, kExactNegInf = 2u, kExactNaN = 4u;

struct ExactAcc {
    int64_t limb[kExactLimbs];  // limb[k] weighs 2^(32k - 149)
    uint32_t special;           // kExactPosInf | kExactNegInf | kExactNaN seen so far
};

DT_HD void exact_init(ExactAcc& a) {
    for (int k = 0; k < kExactLimbs; ++k) a.limb[k] = 0;
    a.special = 0;
}

/// m * 2^p (in units of 2^-149), m < 2^24, p in [0, 253], negated when neg_mask = -1 (0: not),
/// as the changes of two limbs: the signed value sv = +-(m << p % 32) (<= 56 bits) is split as
/// sv = lo + hi * 2^32 with lo = sv mod 2^32 in [0, 2^32) and hi = floor(sv / 2^32) in
/// [-2^23 - 1, 2^23] for limbs k = p / 32 and k + 1: each changes by less than 2^32 (1 unit).
struct ExactLimbPair {
    int64_t k, lo, hi;
};
DT_HD ExactLimbPair exact_limb_pair(uint64_t m, uint32_t p, int64_t neg_mask) {
    const int64_t v = static_cast<int64_t>(m << (p & 31u));
    const int64_t sv = (v ^ neg_mask) - neg_mask;
    return ExactLimbPair{static_cast<int64_t>(p >> 5),
                         static_cast<int64_t>(static_cast<uint64_t>(sv) & 0xffffffffu),
                         sv >> 32};  // arithmetic shift: floor
}

/// Adds m * 2^p (exact_limb_pair's terms).
DT_HD void exact_add_scaled(ExactAcc& a, uint64_t m, uint32_t p, int64_t neg_mask) {
    const ExactLimbPair d = exact_limb_pair(m, p, neg_mask);
    a.limb[d.k] += d.lo;
    a.limb[d.k + 1] += d.hi;
}

/// The flag of an infinity or NaN (bits u, biased exponent 255).
DT_HD uint32_t exact_special_flag(uint32_t u) {
    return (u & 0x7fffffu) ? kExactNaN : ((u >> 31) ? kExactNegInf : kExactPosInf);
}

/// The rare inputs: subnormals and zeros (E = 0: no implicit bit, p = 0), inf and NaN (flags).
DT_HD void exact_add_rare(ExactAcc& a, uint32_t u) {
    if (((u >> 23) & 0xffu) == 0xffu) {
        a.special |= exact_special_flag(u);
        return;
    }
    exact_add_scaled(a, u & 0x7fffffu, 0u, static_cast<int32_t>(u) >> 31);
}

/// Adds x exactly (1 unit of headroom). Normal floats take the short path: one predictable
/// branch, mantissa | implicit bit, p = E - 1, a conditional negation and two limb adds.
DT_HD void exact_add(ExactAcc& a, float x) {
    const uint32_t u = float_to_bits(x);
    const uint32_t e = (u >> 23) & 0xffu;
    if (e - 1u >= 254u) {  // E == 0 (wraps) or E == 255
        exact_add_rare(a, u);
        return;
    }
    exact_add_scaled(a, (u & 0x7fffffu) | 0x800000u, e - 1u, static_cast<int32_t>(u) >> 31);
}

/// a += b, limb-wise (units add up). Associative and commutative.
DT_HD void exact_merge(ExactAcc& a, const ExactAcc& b) {
    for (int k = 0; k < kExactLimbs; ++k) a.limb[k] += b.limb[k];
    a.special |= b.special;
}

/// Carry propagation on raw limbs: limbs 0..7 become digits in [0, 2^32), limb 8 the signed rest.
DT_HD void exact_normalise_limbs(int64_t* d) {
    for (int k = 0; k + 1 < kExactLimbs; ++k) {
        const int64_t carry = d[k] >> 32;  // floor(d[k] / 2^32): arithmetic shift
        d[k] = static_cast<int64_t>(static_cast<uint64_t>(d[k]) & 0xffffffffu);
        d[k + 1] += carry;
    }
}

/// Same value, 1 unit of headroom used afterwards.
DT_HD void exact_normalise(ExactAcc& a) { exact_normalise_limbs(a.limb); }

DT_HD int exact_clz32(uint32_t x) {  // x != 0
#if defined(__CUDA_ARCH__)
    return __clz(static_cast<int>(x));
#else
    return __builtin_clz(x);
#endif
}

/// The exact sum rounded once to float32 (RNE); see the header comment for special values.
DT_HD float exact_value(const ExactAcc& a) {
    if (a.special != 0u) {
        const bool nan = (a.special & kExactNaN) != 0u ||
                         (a.special & (kExactPosInf | kExactNegInf)) == (kExactPosInf | kExactNegInf);
        if (nan) return bits_to_float(0x7fc00000u);
        return bits_to_float((a.special & kExactNegInf) ? 0xff800000u : 0x7f800000u);
    }
    int64_t d[kExactLimbs];
    for (int k = 0; k < kExactLimbs; ++k) d[k] = a.limb[k];
    exact_normalise_limbs(d);
    uint32_t sign = 0u;
    if (d[kExactLimbs - 1] < 0) {  // magnitude: negate every limb and propagate again
        sign = 0x80000000u;
        for (int k = 0; k < kExactLimbs; ++k) d[k] = -d[k];
        exact_normalise_limbs(d);
    }
    if (d[8] >= (int64_t{1} << 21)) return bits_to_float(sign | 0x7f800000u);  // >= 2^128
    int k = kExactLimbs - 1;
    while (k > 0 && d[k] == 0) --k;
    const uint64_t top = static_cast<uint64_t>(d[k]);  // < 2^32 from here on
    if (k == 0 && top < (1u << 24)) {
        return bits_to_float(sign | static_cast<uint32_t>(top));  // exact; zero gives +0
    }
    const int b = 31 - exact_clz32(static_cast<uint32_t>(top));  // top bit t = 32k + b >= 24
    const uint64_t w = (top << 32) | (k > 0 ? static_cast<uint64_t>(d[k - 1]) : 0u);
    bool sticky = false;
    for (int j = 0; j + 1 < k; ++j) sticky = sticky || d[j] != 0;
    const int sh = b + 9;  // w holds bits 32(k-1) .. 32k+31; keep bits t-23 .. t
    const uint32_t mant = static_cast<uint32_t>(w >> sh);
    const uint64_t rest = w & ((uint64_t{1} << sh) - 1u);
    const uint64_t half = uint64_t{1} << (sh - 1);
    const uint32_t up = (rest > half || (rest == half && (sticky || (mant & 1u)))) ? 1u : 0u;
    uint32_t bits = (static_cast<uint32_t>(32 * k + b - 23) << 23) + mant + up;
    if (bits > 0x7f800000u) bits = 0x7f800000u;
    return bits_to_float(sign | bits);
}

// ---- long sums: exponent bins ----
// For long arrays exact_add_array first adds each normal float's 24-bit mantissa (unsigned) to a
// 64-bit bin selected by its sign and exponent, u >> 23 (512 bins; four interleaved sets so that
// runs of equal exponents do not wait on one bin). That is 3 integer ops and one add per element,
// about the cost of a plain float sum, and exact: a bin takes 2^40 adds before it could wrap.
// Zeros and subnormals (E = 0) add their bare mantissa to their bin; only Inf/NaN (E = 255) go
// to the accumulator directly. At the end every nonzero bin B of exponent E is folded into the
// limbs as +-B * 2^(max(E, 1) - 1) (3 digits, 1 unit). The host uses this
// path for n >= kExactBinsMin; device code, where 16 KB of bins per thread would be local memory
// for every resident thread, always uses the direct path. Both are exact: same bits.
constexpr int64_t kExactBinsMin = 4096;
constexpr int kExactBinSets = 4;

/// Folds bin value b (mantissa sum) of exponent E into a: a += +-b * 2^(E-1) units (1 unit).
DT_HD void exact_fold_bin(ExactAcc& a, uint64_t b, uint32_t e, bool neg) {
    const uint32_t p = e - 1u, sh = p & 31u, k = p >> 5;
    const uint64_t lo = b << sh;                            // bits 0..63 of b * 2^sh
    const uint64_t hi = sh ? (b >> (64u - sh)) : 0u;        // bits 64..94, < 2^31
    const int64_t s = neg ? -1 : 0;  // conditional negation: (d ^ s) - s
    a.limb[k] += (static_cast<int64_t>(lo & 0xffffffffu) ^ s) - s;
    if (k + 1 < kExactLimbs - 1) {
        a.limb[k + 1] += (static_cast<int64_t>(lo >> 32) ^ s) - s;
        a.limb[k + 2] += (static_cast<int64_t>(hi) ^ s) - s;
    } else {  // k == 7: limb 8 is the signed top, it takes the rest at once (< 2^61)
        a.limb[k + 1] += (static_cast<int64_t>((lo >> 32) | (hi << 32)) ^ s) - s;
    }
}

/// Direct path: four interleaved accumulators, merged into a (exact, so order does not matter).
DT_HD void exact_add_direct(ExactAcc& a, const float* x, int64_t n, int64_t stride) {
    ExactAcc b, c, d;
    exact_init(b);
    exact_init(c);
    exact_init(d);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        exact_add(a, x[i * stride]);
        exact_add(b, x[(i + 1) * stride]);
        exact_add(c, x[(i + 2) * stride]);
        exact_add(d, x[(i + 3) * stride]);
    }
    for (; i < n; ++i) exact_add(a, x[i * stride]);
    exact_merge(a, b);
    exact_merge(a, c);
    exact_merge(a, d);
}

#if !defined(__CUDA_ARCH__)
/// Binned path (host), see above. n < 2^40 keeps every bin below 2^64 (rounds are 2^29).
inline void exact_add_binned(ExactAcc& a, const float* x, int64_t n, int64_t stride) {
    uint64_t bin[kExactBinSets][512] = {};
    int64_t i = 0;
    // Zeros and subnormals (E = 0) go to their bin too, without the implicit bit (folded at
    // p = 0): a branch on them would mispredict on ReLU gradients, which are half zeros.
    const auto one = [&a](uint64_t* set, float f) {
        const uint32_t u = float_to_bits(f);
        const uint32_t e = (u >> 23) & 0xffu;
        if (e == 0xffu) {  // Inf/NaN: flags (rare, predictable)
            exact_add_rare(a, u);
            return;
        }
        set[u >> 23] += (u & 0x7fffffu) | (e != 0u ? 0x800000u : 0u);
    };
    for (; i + kExactBinSets <= n; i += kExactBinSets) {
        for (int s = 0; s < kExactBinSets; ++s) one(bin[s], x[(i + s) * stride]);
    }
    for (; i < n; ++i) one(bin[0], x[i * stride]);
    for (int s = 0; s < kExactBinSets; ++s) {
        for (uint32_t idx = 0; idx < 512; ++idx) {
            if (bin[s][idx] == 0) continue;
            const uint32_t e = idx & 0xffu;  // E = 0 holds units of 2^-149 (p = 0), as E = 1
            exact_fold_bin(a, bin[s][idx], e != 0u ? e : 1u, (idx >> 8) != 0);
        }
    }
}
#endif

/// a += x[0], x[s], ..., x[(n-1)s]; any n. Precondition: a holds at most 2^30 units on entry.
/// On return a is normalised (1 unit) if n > 0.
DT_HD void exact_add_array(ExactAcc& a, const float* x, int64_t n, int64_t stride = 1) {
    // Per round of <= 2^29 elements a gains < 2^29 + 2^12 units (adds, merges, bin folds), so
    // entry (2^30) + round stays below kExactHeadroom; then a is normalised.
    constexpr int64_t kRound = int64_t{1} << 29;
    for (int64_t i = 0; i < n;) {
        const int64_t len = (n - i > kRound) ? kRound : n - i;
#if defined(__CUDA_ARCH__)
        exact_add_direct(a, x + i * stride, len, stride);
#else
        if (len >= kExactBinsMin) exact_add_binned(a, x + i * stride, len, stride);
        else exact_add_direct(a, x + i * stride, len, stride);
#endif
        exact_normalise(a);
        i += len;
    }
}

/// The exactly rounded sum of x[0], x[s], ..., x[(n-1)s]; +0 for n == 0.
DT_HD float exact_sum(const float* x, int64_t n, int64_t stride = 1) {
    ExactAcc a;
    exact_init(a);
    exact_add_array(a, x, n, stride);
    return exact_value(a);
}

/// *limb += v, *special |= flag: atomic, relaxed (the kernel's end publishes the results).
DT_HD void exact_atomic_limb_add(int64_t* limb, int64_t v) {
#if defined(__CUDA_ARCH__)  // two's complement: the unsigned add is the signed one
    atomicAdd(reinterpret_cast<unsigned long long*>(limb), static_cast<unsigned long long>(v));
#else
    __atomic_fetch_add(limb, v, __ATOMIC_RELAXED);
#endif
}
DT_HD void exact_atomic_flag(uint32_t* special, uint32_t flag) {
#if defined(__CUDA_ARCH__)
    atomicOr(special, flag);
#else
    __atomic_fetch_or(special, flag, __ATOMIC_RELAXED);
#endif
}

/// *dst += src with an atomic integer add per limb and an atomic or of the flags: threads that
/// merge their partial accumulators into one shared accumulator in any order and interleaving
/// leave the same value (integer addition is associative; each limb add is atomic). The units
/// add up as in exact_merge. ORDER: none.
DT_HD void exact_atomic_merge(ExactAcc* dst, const ExactAcc& src) {
    for (int k = 0; k < kExactLimbs; ++k) exact_atomic_limb_add(&dst->limb[k], src.limb[k]);
    if (src.special != 0u) exact_atomic_flag(&dst->special, src.special);
}

/// *dst += x exactly, with an atomic integer add on each limb exact_add(x) changes (two at
/// most; none for a zero) or an atomic or of x's flag: adds from any threads into one shared
/// accumulator, in any order and interleaving, leave the same value, exact_add's (1 unit each).
/// ORDER: none.
DT_HD void exact_atomic_add(ExactAcc* dst, float x) {
    const uint32_t u = float_to_bits(x);
    const uint32_t e = (u >> 23) & 0xffu;
    if (e == 0xffu) {
        exact_atomic_flag(&dst->special, exact_special_flag(u));
        return;
    }
    const uint64_t m = e == 0u ? (u & 0x7fffffu) : ((u & 0x7fffffu) | 0x800000u);
    if (m == 0u) return;  // a zero adds nothing
    const ExactLimbPair d =
        exact_limb_pair(m, e == 0u ? 0u : e - 1u, static_cast<int32_t>(u) >> 31);
    exact_atomic_limb_add(&dst->limb[d.k], d.lo);
    if (d.hi != 0) exact_atomic_limb_add(&dst->limb[d.k + 1], d.hi);
}

// ---- vector helpers: one accumulator per output element ----

DT_HD void exact_init_row(ExactAcc* accs, int64_t n) {
    for (int64_t i = 0; i < n; ++i) exact_init(accs[i]);
}

/// accs[i] += x[i * stride] for i in [0, n): one unit each.
DT_HD void exact_add_row(ExactAcc* accs, const float* x, int64_t n, int64_t stride = 1) {
    for (int64_t i = 0; i < n; ++i) exact_add(accs[i], x[i * stride]);
}

/// out[i * stride] = exact_value(accs[i]) for i in [0, n).
DT_HD void exact_value_row(const ExactAcc* accs, float* out, int64_t n, int64_t stride = 1) {
    for (int64_t i = 0; i < n; ++i) out[i * stride] = exact_value(accs[i]);
}

}  // namespace dt::kernels::common

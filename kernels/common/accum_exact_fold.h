// SPDX-License-Identifier: MIT
// Folding floats into an exact running double, and moving that double into an ExactAcc's limbs
// (accum_exact.h), for a GPU thread that adds many floats into one shared accumulator with
// integer atomics: conv.wgrad's exact mode adds a group of samples' chains per output this way
// (kernels/cuda/conv2d_tiled_bodies.h), one atomic add per limb per group instead of per sample.
//
// Why the running double stays exact. exact_fold adds x to the double `part` only when the
// addition is exact, which it tests (Dekker's Fast2Sum: for doubles a, b with |a| >= |b| and
// s = RN(a + b), s - a is computed exactly and the error of s is b - (s - a), so s is exact iff
// RN(s - a) == b; the same with a and b swapped when |b| > |a|; an exact s passes both). Otherwise
// part (exact so far) goes into the accumulator and part starts again from x. So part is always the
// exact sum of the finite floats folded since it last moved: a multiple of 2^-149 (every float is)
// below 2^24 * 2^128 * (terms) in magnitude, and exact_add_double moves it into the limbs without
// rounding. Infinities and NaN never enter part: they set the accumulator's flags at once
// (exact_add's rules). ORDER: none. The accumulator ends with the exact sum of the floats whatever
// the order of the folds and of the threads' atomic adds (integer addition is associative), so
// exact_value gives the exact mode's bits.
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/hd.h"

namespace dt::kernels::common {

DT_HD uint64_t double_to_bits(double d) {
#if defined(__CUDA_ARCH__)
    return static_cast<uint64_t>(__double_as_longlong(d));
#else
    return __builtin_bit_cast(uint64_t, d);
#endif
}

/// A finite double d that is a multiple of 2^-149 with |d| < 2^138 (the limbs' range), as the
/// changes of three consecutive limbs k, k + 1, k + 2 (each below 2^32 in magnitude: one unit of
/// headroom each; d = 0: all zero). d = M 2^q in units of 2^-149 with M < 2^53 (q >= -52, and
/// M's low -q bits are zero when q < 0: d is a multiple of 2^-149); M 2^(q % 32) (< 2^84) splits
/// into 32-bit digits lo, mid, hi, each negated for a negative d.
struct ExactLimbTriple {
    int64_t k, lo, mid, hi;
};
DT_HD ExactLimbTriple exact_limb_triple(double d) {
    const uint64_t u = double_to_bits(d);
    if ((u << 1) == 0u) return ExactLimbTriple{0, 0, 0, 0};
    const int32_t e = static_cast<int32_t>((u >> 52) & 0x7ffu);  // normal: |d| >= 2^-149
    uint64_t m = (u & ((uint64_t{1} << 52) - 1u)) | (uint64_t{1} << 52);
    int32_t q = e - 1075 + 149;  // d = m 2^(e - 1075) = m 2^q 2^-149
    if (q < 0) {
        m >>= -q;  // only zero bits leave
        q = 0;
    }
    const uint32_t sh = static_cast<uint32_t>(q) & 31u;
    const uint64_t lo = (m << sh) & 0xffffffffu;
    const uint64_t rest = m >> (32u - sh);  // bits 32.. of m 2^sh (a 64-bit m: sh = 0 is fine)
    const int64_t sign = (u >> 63) != 0u ? -1 : 1;
    return ExactLimbTriple{q >> 5, sign * static_cast<int64_t>(lo),
                           sign * static_cast<int64_t>(rest & 0xffffffffu),
                           sign * static_cast<int64_t>(rest >> 32)};
}

/// a += d exactly (exact_limb_triple's d; 1 unit of headroom).
DT_HD void exact_add_double(ExactAcc& a, double d) {
    const ExactLimbTriple t = exact_limb_triple(d);
    a.limb[t.k] += t.lo;
    if (t.mid != 0) a.limb[t.k + 1] += t.mid;
    if (t.hi != 0) a.limb[t.k + 2] += t.hi;  // zero where k + 2 would leave the limbs
}

/// *dst += d exactly with an atomic integer add on each limb it changes (three at most, none for
/// a zero): exact_add_double for accumulators shared by threads. ORDER: none.
DT_HD void exact_atomic_add_double(ExactAcc* dst, double d) {
    const ExactLimbTriple t = exact_limb_triple(d);
    if (t.lo != 0) exact_atomic_limb_add(&dst->limb[t.k], t.lo);
    if (t.mid != 0) exact_atomic_limb_add(&dst->limb[t.k + 1], t.mid);
    if (t.hi != 0) exact_atomic_limb_add(&dst->limb[t.k + 2], t.hi);
}

/// Whether s = RN(a + b) is exact in double (Fast2Sum's test, see the header comment): when
/// it is, s - a = b and s - b = a exactly; when it is not, the difference from the larger of a
/// and b is computed exactly and differs from the other by the error. Both tests, so no
/// comparison of magnitudes.
DT_HD bool exact_double_sum_is_exact(double a, double b, double s) {
    return s - a == b && s - b == a;
}

/// Folds x into the exact running double part: part += x where that is exact, else part moves
/// into dst (move(dst, part): exact_add_double or exact_atomic_add_double) and becomes x; an
/// infinity or NaN sets dst's flag instead (flag(dst, flag)). Callers move part into dst at the
/// end. At most 2^31 moves per accumulator between normalisations (headroom).
template <class Acc, class Move, class Flag>
DT_HD void exact_fold(double& part, float x, Acc dst, const Move& move, const Flag& flag) {
    const uint32_t u = float_to_bits(x);
    if (((u >> 23) & 0xffu) == 0xffu) {
        flag(dst, exact_special_flag(u));
        return;
    }
    const double b = static_cast<double>(x);
    const double s = part + b;
    if (exact_double_sum_is_exact(part, b, s)) {
        part = s;
        return;
    }
    move(dst, part);
    part = b;
}

/// exact_fold into an accumulator shared with other threads (integer atomics).
DT_HD void exact_fold_atomic(double& part, float x, ExactAcc* dst) {
    exact_fold(
        part, x, dst, [](ExactAcc* a, double d) { exact_atomic_add_double(a, d); },
        [](ExactAcc* a, uint32_t f) { exact_atomic_flag(&a->special, f); });
}

}  // namespace dt::kernels::common

// SPDX-License-Identifier: MIT
// The exact mode's value (accum_exact.h: the exact sum rounded once) of a short sum, found in
// double arithmetic where that is exact, for the GPU's per-element reductions (conv.dgrad's
// taps, pooling's windows, the wgrad combines). An ExactAcc there lives in local memory: nine
// 64-bit stores to set it up and a load-add-store per term. A double and two exponents stay in
// registers.
//
// Why the double sum can be exact: with biased exponent E, a nonzero finite float is
// m * 2^(p - 149), m < 2^24, p = max(E, 1) - 1 (accum_exact.h). If p_lo and p_hi are the least
// and greatest p of the nonzero terms, every partial sum of `count` terms is a multiple of
// 2^(p_lo - 149) below count * 2^(p_hi + 24 - 149) in magnitude: it has at most
// (p_hi - p_lo) + 24 + ceil(log2(count)) significant bits. When that is <= 53, each double add
// (operands and result representable; double's range covers 2^-149 .. count * 2^128) is exact,
// in any order, so the double sum IS the exact sum, and its conversion to float is the one
// round-to-nearest-even that exact_value performs: overflow to +-inf at the same threshold, an
// exact zero +0 (the sum starts at +0, and x + -x is +0). Otherwise, and for any NaN or
// infinity (exact_value's special rules), the terms go through an ExactAcc after all.
// ORDER: none (the result is exact_value's whatever the order).
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/hd.h"

namespace dt::kernels::common {

/// A short exact sum in progress: the double sum and the terms' exponent span.
struct ExactShort {
    double sum;
    int32_t p_lo, p_hi;  // least and greatest p of the nonzero terms (255 and 0 before any)
    int64_t count;       // terms added, zeros included (a bound needs no more)
    bool special;        // a NaN or an infinity was added
};

DT_HD void exact_short_init(ExactShort& s) {
    s.sum = 0.0;
    s.p_lo = 255, s.p_hi = 0;
    s.count = 0;
    s.special = false;
}

DT_HD void exact_short_add(ExactShort& s, float x) {
    const uint32_t u = float_to_bits(x);
    const int32_t e = static_cast<int32_t>((u >> 23) & 0xffu);
    const int32_t p = (e == 0 ? 1 : e) - 1;
    const bool nonzero = (u << 1) != 0u;
    const int32_t lo = nonzero ? p : 255, hi = nonzero ? p : 0;
    s.p_lo = lo < s.p_lo ? lo : s.p_lo;
    s.p_hi = hi > s.p_hi ? hi : s.p_hi;
    s.special = s.special || e == 0xff;
    s.count += 1;
    s.sum += static_cast<double>(x);
}

/// ceil(log2(count)) for count >= 1 (0 for count <= 1), at most 62.
DT_HD int exact_short_head(int64_t count) {
    int b = 0;
    while (b < 62 && (int64_t{1} << b) < count) ++b;
    return b;
}

/// Whether s.sum is the exact sum of the terms (see the header comment), so that
/// exact_short_value is exact_value's answer.
DT_HD bool exact_short_exact(const ExactShort& s) {
    return !s.special && (s.p_hi - s.p_lo) + 24 + exact_short_head(s.count) <= 53;
}

/// The exact sum rounded once to float (when exact_short_exact).
DT_HD float exact_short_value(const ExactShort& s) { return static_cast<float>(s.sum); }

/// exact_value of the terms that each(add) passes to add (add(float)), each calls add once per
/// term and gives the same terms every time: through ExactShort, and when its double sum is not
/// exact once more through an ExactAcc (each runs once or twice).
template <class Each>
DT_HD float exact_sum_of(const Each& each) {
    ExactShort s;
    exact_short_init(s);
    each([&](float v) { exact_short_add(s, v); });
    if (exact_short_exact(s)) return exact_short_value(s);
    ExactAcc a;
    exact_init(a);
    each([&](float v) { exact_add(a, v); });
    return exact_value(a);
}

// ---- streaming into an ExactAcc: long sums whose accumulator must stay unrounded ----
// A per-row leaf of the exact mode is an ExactAcc (merged with others later), of up to
// thousands of terms. exact_stream_add keeps a segment of terms in an ExactShort while its double
// sum stays exact (at most kExactSegment terms within kExactSegmentSpan binades) and moves the
// segment's sum into the ExactAcc when the next term would break that (or at the end,
// exact_stream_flush): an exact double d is the sum of three floats hi = float(d),
// mid = float(d - hi), lo = float(d - hi - mid), each difference exact in double (d has at most
// 53 significant bits, hi takes 24 of them and leaves a remainder below half its last place),
// so the accumulator gains exactly d. Terms in the top binades (a segment of them could leave
// the float range) and NaN and infinities go straight in. The accumulator ends with the same
// value, so the same normalised limbs, as with exact_add of every term; its units: one per
// straight term, at most three per flushed segment of two or more terms, one for a segment of
// one: at most 1.5 per term.
inline constexpr int64_t kExactSegment = 128;
inline constexpr int32_t kExactSegmentSpan = 53 - 24 - 7;  // 7 = ceil(log2(kExactSegment))
/// Biased exponents from here up go straight in: 128 terms below 2^(247 - 127) stay below 2^127.
inline constexpr uint32_t kExactStraightExponent = 247;

/// Moves the segment's sum into `a` (nothing for an empty segment) and empties it.
DT_HD void exact_stream_flush(ExactAcc& a, ExactShort& seg) {
    const double d = seg.sum;
    const float hi = static_cast<float>(d);
    const double r = d - static_cast<double>(hi);
    const float mid = static_cast<float>(r);
    const float lo = static_cast<float>(r - static_cast<double>(mid));
    if (hi != 0.0f) exact_add(a, hi);
    if (mid != 0.0f) exact_add(a, mid);
    if (lo != 0.0f) exact_add(a, lo);
    exact_short_init(seg);
}

/// Adds x exactly to a, through the segment seg (see above). ORDER: none.
DT_HD void exact_stream_add(ExactAcc& a, ExactShort& seg, float x) {
    const uint32_t u = float_to_bits(x);
    const uint32_t e = (u >> 23) & 0xffu;
    if (e >= kExactStraightExponent) {
        exact_add(a, x);
        return;
    }
    if ((u << 1) == 0u) return;  // a zero adds nothing (the accumulator keeps no sign of zero)
    const int32_t p = static_cast<int32_t>(e == 0 ? 1 : e) - 1;
    const int32_t lo = p < seg.p_lo ? p : seg.p_lo, hi = p > seg.p_hi ? p : seg.p_hi;
    if (seg.count >= kExactSegment || (seg.count > 0 && hi - lo > kExactSegmentSpan))
        exact_stream_flush(a, seg);
    exact_short_add(seg, x);
}

}  // namespace dt::kernels::common

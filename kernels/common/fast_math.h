// SPDX-License-Identifier: MIT
// exp and log for float built from + - * / and integer bit manipulation only, so glibc, any other
// libm and CUDA's libdevice play no part: the CPU and CUDA builds return identical bits.
// Accuracy: <= 2 ulp against the exact result over the whole float range (measured by
// tests/kernels/common/fast_math_test.cpp). Special cases follow C99 Annex F: exp(NaN) = NaN,
// exp(+inf) = +inf, exp(-inf) = 0, exp overflow = +inf, exp underflow = subnormal or 0;
// log(NaN) = NaN, log(+inf) = +inf, log(+-0) = -inf, log(x < 0) = NaN.
// Method and coefficients: Cody-Waite range reduction plus the minimax polynomials of Cephes
// expf.c / logf.c (S. L. Moshier). ORDER: every float operation below is written out in the order
// it runs; the build forbids contraction, so each * and + rounds separately (no fma anywhere).
#pragma once
#include "kernels/common/hd.h"

namespace dt::kernels::common {

/// 2^n exactly, for n in [-126, 127] (a normal float).
DT_HD float pow2i(int n) { return bits_to_float(static_cast<uint32_t>(n + 127) << 23); }

constexpr float kLn2Hi = 0.693359375f;     // 355/512: n * kLn2Hi is exact for |n| < 2^15
constexpr float kLn2Lo = -2.12194440e-4f;  // ln 2 - kLn2Hi

/// e^x = e^r * 2^n for x in [-104, 88.8]: n and e^r. ORDER: n = rne(x * log2 e) (shifter
/// 1.5*2^23), r = (x - n*ln2hi) - n*ln2lo, e^r = ((P(r) * r^2) + r) + 1 with P by Horner.
struct ExpParts {
    int n;
    float er;  // e^r in [0.70, 1.42]
};
DT_HD ExpParts dt_exp_parts(float x) {
    const float t = x * 1.44269504088896341f;
    const float nf = (t + 12582912.0f) - 12582912.0f;  // round to nearest even, |t| < 2^22
    float r = x - nf * kLn2Hi;  // exact: nf * kLn2Hi has <= 17 bits and is close to x
    r = r - nf * kLn2Lo;        // |r| <= ~0.35
    const float z = r * r;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    return ExpParts{static_cast<int>(nf), (p * z + r) + 1.0f};
}

/// e^x: dt_exp_parts, then e^r * 2^n in two exact-or-final steps where 2^n is not a float.
DT_HD float dt_expf(float x) {
    if (x != x) return x + x;                                     // NaN, quieted
    if (x > 88.72283172607421875f) return bits_to_float(0x7f800000u);  // e^x > FLT_MAX: +inf
    if (x < -104.0f) return 0.0f;  // e^x < 2^-150 (half the least subnormal); also -inf
    const ExpParts e = dt_exp_parts(x);
    if (e.n > 127) return (e.er * 2.0f) * pow2i(e.n - 1);  // n == 128: below FLT_MAX in two steps
    if (e.n < -126) return (e.er * pow2i(e.n + 64)) * pow2i(-64);  // exact, then one rounding
    return e.er * pow2i(e.n);
}

/// dt_expf's bits for every x, NaN included, with selects instead of branches: a loop over it
/// vectorizes (the CPU kernels' exp over a row). ORDER: dt_expf's, on x clamped to
/// [-104, 88.8] (NaN to 0, so the conversion to int is defined), then the special cases chosen.
DT_HD float dt_expf_select(float x) {
    float xc = x < -104.0f ? -104.0f : x;
    xc = xc > 88.8f ? 88.8f : xc;
    xc = xc == xc ? xc : 0.0f;
    const ExpParts e = dt_exp_parts(xc);
    const float big = (e.er * 2.0f) * pow2i(e.n - 1);
    const float tiny = (e.er * pow2i(e.n + 64)) * pow2i(-64);
    const float normal = e.er * pow2i(e.n);
    const float y = e.n > 127 ? big : (e.n < -126 ? tiny : normal);
    const float special = x > 88.72283172607421875f ? bits_to_float(0x7f800000u) : 0.0f;
    const float out = x > 88.72283172607421875f || x < -104.0f ? special : y;
    return x != x ? x + x : out;
}

/// Natural logarithm. ORDER: x = m * 2^e with m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact),
/// y = ((Q(f) * f) * f^2 + e*ln2lo) - 0.5*f^2 with Q by Horner, result = (f + y) + e*ln2hi.
DT_HD float dt_logf(float x) {
    if (x != x) return x + x;                            // NaN, quieted
    if (x < 0.0f) return bits_to_float(0x7fc00000u);     // log of a negative number: NaN
    if (x == 0.0f) return bits_to_float(0xff800000u);    // log(+-0) = -inf
    uint32_t u = float_to_bits(x);
    if (u == 0x7f800000u) return x;                      // log(+inf) = +inf
    int e = 0;
    if (u < 0x00800000u) {  // subnormal: scale by 2^23 (exact) first
        u = float_to_bits(x * 8388608.0f);
        e = -23;
    }
    e += static_cast<int>(u >> 23) - 126;                        // x = m * 2^e, m in [0.5, 1)
    const float m = bits_to_float((u & 0x007fffffu) | 0x3f000000u);
    float f;
    if (m < 0.707106781186547524f) {
        e -= 1;
        f = (m + m) - 1.0f;  // exact
    } else {
        f = m - 1.0f;  // exact
    }
    const float z = f * f;
    float q = 7.0376836292e-2f;
    q = q * f - 1.1514610310e-1f;
    q = q * f + 1.1676998740e-1f;
    q = q * f - 1.2420140846e-1f;
    q = q * f + 1.4249322787e-1f;
    q = q * f - 1.6668057665e-1f;
    q = q * f + 2.0000714765e-1f;
    q = q * f - 2.4999993993e-1f;
    q = q * f + 3.3333331174e-1f;
    const float ef = static_cast<float>(e);
    float y = (q * f) * z;
    y = y + ef * kLn2Lo;
    y = y - 0.5f * z;
    return (f + y) + ef * kLn2Hi;  // ef * kLn2Hi is exact
}

}  // namespace dt::kernels::common

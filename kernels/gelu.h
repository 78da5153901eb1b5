// SPDX-License-Identifier: MIT
// Contract of the GELU kernels, tanh form (GPT-2's): y = 0.5 x (1 + tanh(u)),
// u = k0 (x + k1 x^3), k0 = sqrt(2 / pi), k1 = 0.044715. dx = dy * GELU'(x).
// Numeric recipe, per element, no reduction (every backend runs the same element functions, so
// every implementation gives the same bits). tanh comes from the project's own exp (no libm), in
// forms that keep a small 1 + tanh u or 1 - tanh u relatively accurate:
//   ORDER: u = k0 * (x + k1 * ((x * x) * x)); e = dt_expf(-2 * u) (-2 * u exact); d = 1 + e;
//          p = 2 / d (= 1 + tanh u);  y = (0.5 * x) * p
//   ORDER: q = u >= 0 ? (2 * e) / d : 2 - p (= 1 - tanh u); s = p * q (= 1 - tanh^2 u);
//          du = k0 * (1 + (3 * k1) * (x * x)); g = 0.5 * p + ((0.5 * x) * s) * du; dx = dy * g
// Large |x|: e = +inf gives p = +0 and y = 0 with x's sign; e = +0 gives p = 2 and y = x.
// x = -inf gives y = NaN (-inf * 0); x = +inf gives y = +inf; dx is NaN at x = +-inf (inf * 0).
// NaN propagates. No fused multiply-add: each * and + rounds (the build forbids contraction).
#pragma once
#include <cstdint>

#include "kernels/common/fast_math.h"
#include "kernels/common/hd.h"

namespace dt::kernels {

inline constexpr float kGeluK0 = 0.7978845608028654f;  // sqrt(2 / pi)
inline constexpr float kGeluK1 = 0.044715f;

/// u of the recipe.
DT_HD float gelu_u(float x) { return kGeluK0 * (x + kGeluK1 * ((x * x) * x)); }

/// e^x of the recipe: dt_expf, or with kSelect its branch-free twin dt_expf_select (the same
/// bits; a CPU loop over it vectorizes).
template <bool kSelect>
DT_HD float gelu_exp(float x) {
    if constexpr (kSelect) return common::dt_expf_select(x);
    return common::dt_expf(x);
}

/// The recipe per element (host-device).
template <bool kSelect = false>
DT_HD float gelu_forward_element(float x) {
    const float p = 2.0f / (1.0f + gelu_exp<kSelect>(-2.0f * gelu_u(x)));
    return (0.5f * x) * p;
}
template <bool kSelect = false>
DT_HD float gelu_backward_element(float x, float dy) {
    const float u = gelu_u(x);
    const float e = gelu_exp<kSelect>(-2.0f * u), d = 1.0f + e;
    const float p = 2.0f / d;
    const float q = u >= 0.0f ? (2.0f * e) / d : 2.0f - p;
    const float du = kGeluK0 * (1.0f + (3.0f * kGeluK1) * (x * x));
    return dy * (0.5f * p + ((0.5f * x) * (p * q)) * du);
}

namespace ref {
inline void gelu_forward(const double* x, double* y, int64_t n);
inline void gelu_backward(const double* x, const double* dy, double* dx, int64_t n);
}  // namespace ref

// The float kernels, one list for both backends: cpu:: (kernels/cpu/gelu.cpp) and cuda::
// (kernels/cuda/elementwise.cu: device pointers, the engine's stream). (n) -> (n).
#define DT_GELU_KERNELS                                     \
    void gelu_forward(const float* x, float* y, int64_t n); \
    void gelu_backward(const float* x, const float* dy, float* dx, int64_t n);

namespace cpu {
DT_GELU_KERNELS
}  // namespace cpu

namespace cuda {
DT_GELU_KERNELS
}  // namespace cuda

#undef DT_GELU_KERNELS

}  // namespace dt::kernels

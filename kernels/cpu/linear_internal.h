// SPDX-License-Identifier: MIT
// Private to kernels/cpu/linear*.cpp: the per-mode entry points of linear.dgrad and linear.wgrad
// (recipes in kernels/linear.h). linear.cpp: forward and the tree mode, dispatch by mode;
// linear_modes.cpp: the kahan, exact, permuted and atomic modes.
#pragma once
#include <cstdint>

#include "kernels/linear.h"

namespace dt::kernels::cpu::linear_internal {

constexpr int64_t kChunk = 512;  // dw columns per work item (the per-element state stays in cache)

void linear_wgrad_kahan(const float* x, const float* dy, float* dw, const LinearParams& p);
void linear_wgrad_exact(const float* x, const float* dy, float* dw, const LinearParams& p);
void linear_wgrad_permuted(const float* x, const float* dy, float* dw, const LinearParams& p);
void linear_wgrad_atomic(const float* x, const float* dy, float* dw, const LinearParams& p);
void linear_dgrad_kahan(const float* dy, const float* w, float* dx, const LinearParams& p);
void linear_dgrad_exact(const float* dy, const float* w, float* dx, const LinearParams& p);
void linear_dgrad_permuted(const float* dy, const float* w, float* dx, const LinearParams& p);
void linear_dgrad_atomic(const float* dy, const float* w, float* dx, const LinearParams& p);

}  // namespace dt::kernels::cpu::linear_internal

// SPDX-License-Identifier: MIT
// linear on the CPU (recipes in kernels/linear.h). Forward and dgrad are single cpu::gemm calls
// (parallel over blocks of the output). wgrad: dw is cut into (row o, column chunk) pieces, each
// owned by one loop iteration that pushes the per-sample products into its own tree stack (8
// samples at a time, see below). The other accumulation modes: linear_modes.cpp.
#include "kernels/linear.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/common/reduce_tree.h"
#include "kernels/cpu/linear_internal.h"
#include "kernels/cpu/isa_variants.h"
#include "kernels/gemm.h"

namespace dt::kernels::cpu {

namespace {

using namespace linear_internal;

// ---- linear.dgrad, tree mode (sequential over o; nothing crosses samples) ----
void linear_dgrad_tree(const float* dy, const float* w, float* dx, const LinearParams& p) {
    // ORDER: dx[s,i] = the fma chain from +0 over o ascending of dy[s,o] * w[o,i].
    gemm(dy, w, dx, GemmParams{.m = p.n, .n = p.in, .k = p.out});
}

// ---- linear.wgrad, tree mode ----
// The tree's binary counter merges every aligned, complete group of 8 leaves into the balanced
// sum ((p0+p1)+(p2+p3))+((p4+p5)+(p6+p7)) before that group meets any other leaf, and then treats
// it like one leaf pushed with count b (group index) on the same slot popcount(8b) = popcount(b).
// So groups are summed in registers and pushed with group counts; the last n % 8 leaves continue
// the counter one by one with leaf counts 8*groups + t. The result is T(p[0..n)) bit for bit.

/// leaf[i] = balanced sum over t < 8 of g[t] * x[t * ldx + i], for i < len.
DT_ISA_BODY void group_of_8_body(const float* g, const float* x, int64_t ldx, int64_t len,
                                 float* leaf) {
    const float* x0 = x;
    const float *x1 = x0 + ldx, *x2 = x1 + ldx, *x3 = x2 + ldx, *x4 = x3 + ldx;
    const float *x5 = x4 + ldx, *x6 = x5 + ldx, *x7 = x6 + ldx;
    for (int64_t i = 0; i < len; ++i) {
        const float p0 = g[0] * x0[i], p1 = g[1] * x1[i], p2 = g[2] * x2[i], p3 = g[3] * x3[i];
        const float p4 = g[4] * x4[i], p5 = g[5] * x5[i], p6 = g[6] * x6[i], p7 = g[7] * x7[i];
        leaf[i] = ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7));  // ORDER: tree of 8
    }
}
DT_ISA_VARIANTS(void, group_of_8,
                (const float* g, const float* x, int64_t ldx, int64_t len, float* leaf),
                (g, x, ldx, len, leaf))

void linear_wgrad_tree(const float* x, const float* dy, float* dw, const LinearParams& p) {
    const int64_t chunks = (p.in + kChunk - 1) / kChunk, units = chunks * p.out;
    const int slots = common::tree_slots(p.n);
    const int64_t groups = p.n / 8;
#pragma omp parallel for schedule(static) if (p.n * p.in * p.out > 65536)
    for (int64_t u = 0; u < units; ++u) {
        const int64_t o = u % p.out, lo = (u / p.out) * kChunk;
        const int64_t len = std::min(kChunk, p.in - lo);
        thread_local std::vector<float> t_stack;
        if (static_cast<int64_t>(t_stack.size()) < slots * kChunk)
            t_stack.resize(static_cast<std::size_t>(slots * kChunk));
        float* stack = t_stack.data();
        for (int64_t b = 0; b < groups; ++b) {  // ORDER: groups in sample order
            float g[8];
            for (int t = 0; t < 8; ++t) g[t] = dy[(8 * b + t) * p.out + o];
            group_of_8(g, x + 8 * b * p.in + lo, p.in, len,
                       stack + common::tree_leaf_slot(b) * kChunk);
            common::tree_push(stack, kChunk, 0, len, b);
        }
        for (int64_t s = 8 * groups; s < p.n; ++s) {  // ORDER: remaining leaves in order
            float* leaf = stack + common::tree_leaf_slot(s) * kChunk;
            const float g = dy[s * p.out + o];
            const float* xr = x + s * p.in + lo;
            for (int64_t i = 0; i < len; ++i) leaf[i] = g * xr[i];  // leaf_s = dy * x
            common::tree_push(stack, kChunk, 0, len, s);
        }
        common::tree_finish(stack, kChunk, 0, len, p.n);
        std::memcpy(dw + o * p.in + lo, stack, len * sizeof(float));
    }
}

}  // namespace

void linear_forward(const float* x, const float* w, const float* b, float* y,
                    const LinearParams& p) {
    // ORDER: y[s,o] = the fma chain from +0 over i ascending of x[s,i] * w[o,i] (B = W^T) ...
    gemm(x, w, y, GemmParams{.m = p.n, .n = p.out, .k = p.in, .trans_b = true});
    if (b == nullptr) return;
#pragma omp parallel for schedule(static) if (p.n * p.out > 65536)
    for (int64_t s = 0; s < p.n; ++s)
        for (int64_t o = 0; o < p.out; ++o)  // ORDER: ... then + b[o], once
            y[s * p.out + o] = y[s * p.out + o] + b[o];
}

void linear_backward_data(const float* dy, const float* w, float* dx, const LinearParams& p) {
    switch (p.accum.mode) {
        case common::AccumMode::kTree: linear_dgrad_tree(dy, w, dx, p); return;
        case common::AccumMode::kKahan: linear_dgrad_kahan(dy, w, dx, p); return;
        case common::AccumMode::kExact: linear_dgrad_exact(dy, w, dx, p); return;
        case common::AccumMode::kPermuted: linear_dgrad_permuted(dy, w, dx, p); return;
        case common::AccumMode::kAtomic: linear_dgrad_atomic(dy, w, dx, p); return;
    }
}

void linear_backward_weight(const float* x, const float* dy, float* dw, const LinearParams& p) {
    if (p.n == 0) {
        std::fill(dw, dw + p.out * p.in, 0.0f);
        return;
    }
    switch (p.accum.mode) {
        case common::AccumMode::kTree: linear_wgrad_tree(x, dy, dw, p); return;
        case common::AccumMode::kKahan: linear_wgrad_kahan(x, dy, dw, p); return;
        case common::AccumMode::kExact: linear_wgrad_exact(x, dy, dw, p); return;
        case common::AccumMode::kPermuted: linear_wgrad_permuted(x, dy, dw, p); return;
        case common::AccumMode::kAtomic: linear_wgrad_atomic(x, dy, dw, p); return;
    }
}

}  // namespace dt::kernels::cpu

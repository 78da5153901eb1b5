// SPDX-License-Identifier: MIT
// linear on the CPU (recipes in kernels/linear.h). Forward and dgrad are single cpu::gemm calls
// (parallel over blocks of the output). wgrad: dw is cut into (block of rows, column chunk)
// pieces, each owned by one loop iteration that pushes each row's per-sample products into the
// row's own tree stack (8 samples at a time, see below). The other accumulation modes:
// linear_modes.cpp.
#include "kernels/linear.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/common/reduce_tree.h"
#include "kernels/cpu/isa_variants.h"
#include "kernels/cpu/linear_internal.h"
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

constexpr int kRows = 4;  // dw rows per work item: each load of x feeds kRows products

/// leaf[r][i] = the balanced sum over t < 8 of g[r][t] * x[t * ldx + i], for r < R, i < len.
template <int R>
DT_ISA_BODY void groups_of_8(const float (*g)[8], const float* x, int64_t ldx, int64_t len,
                             float* const* leaf) {
    const float* x0 = x;
    const float *x1 = x0 + ldx, *x2 = x1 + ldx, *x3 = x2 + ldx, *x4 = x3 + ldx;
    const float *x5 = x4 + ldx, *x6 = x5 + ldx, *x7 = x6 + ldx;
#pragma GCC ivdep  // the leaves never overlap x: no dependence between iterations
    for (int64_t i = 0; i < len; ++i) {
        const float a0 = x0[i], a1 = x1[i], a2 = x2[i], a3 = x3[i];
        const float a4 = x4[i], a5 = x5[i], a6 = x6[i], a7 = x7[i];
        for (int r = 0; r < R; ++r) {
            const float p0 = g[r][0] * a0, p1 = g[r][1] * a1, p2 = g[r][2] * a2;
            const float p3 = g[r][3] * a3, p4 = g[r][4] * a4, p5 = g[r][5] * a5;
            const float p6 = g[r][6] * a6, p7 = g[r][7] * a7;
            leaf[r][i] = ((p0 + p1) + (p2 + p3)) + ((p4 + p5) + (p6 + p7));  // ORDER: tree of 8
        }
    }
}

/// dw rows o0 .. o0 + R - 1, columns lo .. lo + len - 1, each row's tree over the samples on
/// its own stack (slots rows of kChunk) in `stack`.
template <int R>
DT_ISA_BODY void wgrad_tree_rows(const float* x, const float* dy, float* dw, const LinearParams& p,
                                 int64_t o0, int64_t lo, int64_t len, float* stack, int slots) {
    float* st[R];
    for (int r = 0; r < R; ++r) st[r] = stack + r * slots * kChunk;
    const int64_t groups = p.n / 8;
    for (int64_t b = 0; b < groups; ++b) {  // ORDER: groups in sample order
        float g[R][8];
        float* leaf[R];
        for (int r = 0; r < R; ++r) {
            for (int t = 0; t < 8; ++t) g[r][t] = dy[(8 * b + t) * p.out + o0 + r];
            leaf[r] = st[r] + common::tree_leaf_slot(b) * kChunk;
        }
        groups_of_8<R>(g, x + 8 * b * p.in + lo, p.in, len, leaf);
        for (int r = 0; r < R; ++r) common::tree_push(st[r], kChunk, 0, len, b);
    }
    for (int64_t s = 8 * groups; s < p.n; ++s) {  // ORDER: remaining leaves in order
        const float* xr = x + s * p.in + lo;
        for (int r = 0; r < R; ++r) {
            float* leaf = st[r] + common::tree_leaf_slot(s) * kChunk;
            const float g = dy[s * p.out + o0 + r];
            for (int64_t i = 0; i < len; ++i) leaf[i] = g * xr[i];  // leaf_s = dy * x
            common::tree_push(st[r], kChunk, 0, len, s);
        }
    }
    for (int r = 0; r < R; ++r) {
        common::tree_finish(st[r], kChunk, 0, len, p.n);
        std::memcpy(dw + (o0 + r) * p.in + lo, st[r], len * sizeof(float));
    }
}

DT_ISA_BODY void wgrad_tree_unit_body(const float* x, const float* dy, float* dw,
                                      const LinearParams& p, int64_t o0, int rows, int64_t lo,
                                      int64_t len, float* stack, int slots) {
    if (rows == kRows) return wgrad_tree_rows<kRows>(x, dy, dw, p, o0, lo, len, stack, slots);
    for (int r = 0; r < rows; ++r) wgrad_tree_rows<1>(x, dy, dw, p, o0 + r, lo, len, stack, slots);
}
DT_ISA_FLAT_VARIANTS(void, wgrad_tree_unit,
                     (const float* x, const float* dy, float* dw, const LinearParams& p, int64_t o0,
                      int rows, int64_t lo, int64_t len, float* stack, int slots),
                     (x, dy, dw, p, o0, rows, lo, len, stack, slots))

// Work items: (block of kRows dw rows, column chunk); each row's stack is the item's own.
void linear_wgrad_tree(const float* x, const float* dy, float* dw, const LinearParams& p) {
    const int64_t chunks = (p.in + kChunk - 1) / kChunk, blocks = (p.out + kRows - 1) / kRows;
    const int64_t units = chunks * blocks;
    const int slots = common::tree_slots(p.n);
#pragma omp parallel for schedule(static) if (p.n * p.in * p.out > 65536)
    for (int64_t u = 0; u < units; ++u) {
        const int64_t o0 = (u % blocks) * kRows, lo = (u / blocks) * kChunk;
        const int rows = static_cast<int>(std::min<int64_t>(kRows, p.out - o0));
        thread_local std::vector<float> t_stack;
        if (static_cast<int64_t>(t_stack.size()) < kRows * slots * kChunk)
            t_stack.resize(static_cast<std::size_t>(kRows * slots * kChunk));
        wgrad_tree_unit(x, dy, dw, p, o0, rows, lo, std::min(kChunk, p.in - lo), t_stack.data(),
                        slots);
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
        case common::AccumMode::kTree:
            linear_dgrad_tree(dy, w, dx, p);
            return;
        case common::AccumMode::kKahan:
            linear_dgrad_kahan(dy, w, dx, p);
            return;
        case common::AccumMode::kExact:
            linear_dgrad_exact(dy, w, dx, p);
            return;
        case common::AccumMode::kPermuted:
            linear_dgrad_permuted(dy, w, dx, p);
            return;
        case common::AccumMode::kAtomic:
            linear_dgrad_atomic(dy, w, dx, p);
            return;
    }
}

void linear_backward_weight(const float* x, const float* dy, float* dw, const LinearParams& p) {
    if (p.n == 0) {
        std::fill(dw, dw + p.out * p.in, 0.0f);
        return;
    }
    switch (p.accum.mode) {
        case common::AccumMode::kTree:
            linear_wgrad_tree(x, dy, dw, p);
            return;
        case common::AccumMode::kKahan:
            linear_wgrad_kahan(x, dy, dw, p);
            return;
        case common::AccumMode::kExact:
            linear_wgrad_exact(x, dy, dw, p);
            return;
        case common::AccumMode::kPermuted:
            linear_wgrad_permuted(x, dy, dw, p);
            return;
        case common::AccumMode::kAtomic:
            linear_wgrad_atomic(x, dy, dw, p);
            return;
    }
}

}  // namespace dt::kernels::cpu

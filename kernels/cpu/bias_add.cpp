// SPDX-License-Identifier: MIT
// bias_add on the CPU (recipes in kernels/bias_add.h). Forward: rows (s, c) split statically.
// bias.grad: each channel is owned by one loop iteration; its per-sample leaves are sequential
// sums, computed 8 samples at a time as 8 interleaved (independent) chains for instruction-level
// parallelism, then pushed into the channel's tree in sample order.
#include "kernels/bias_add.h"

#include "kernels/common/reduce_tree.h"

namespace dt::kernels::cpu {

namespace {

constexpr int64_t kGroup = 8;  // samples whose leaves are computed together (no effect on bits)

void bias_grad_tree(const float* dy, float* db, const BiasAddParams& p) {
#pragma omp parallel for schedule(static) if (p.n * p.c * p.p > 32768)
    for (int64_t c = 0; c < p.c; ++c) {
        common::TreeSum tree;
        common::tree_sum_init(tree);
        for (int64_t s0 = 0; s0 < p.n; s0 += kGroup) {
            const int64_t g = p.n - s0 < kGroup ? p.n - s0 : kGroup;
            float leaf[kGroup] = {};  // ORDER: each leaf starts at +0
            if (g == kGroup) {
                for (int64_t q = 0; q < p.p; ++q)
                    for (int64_t j = 0; j < kGroup; ++j)  // ORDER: positions ascending per leaf
                        leaf[j] = leaf[j] + dy[((s0 + j) * p.c + c) * p.p + q];
            } else {
                for (int64_t j = 0; j < g; ++j)
                    leaf[j] = common::sum_sequential(dy + ((s0 + j) * p.c + c) * p.p, p.p);
            }
            for (int64_t j = 0; j < g; ++j) common::tree_sum_push(tree, leaf[j]);  // ORDER: s
        }
        db[c] = common::tree_sum_finish(tree);
    }
}

}  // namespace

void bias_add_forward(const float* x, const float* b, float* y, const BiasAddParams& p) {
#pragma omp parallel for schedule(static) if (p.n * p.c * p.p > 65536)
    for (int64_t row = 0; row < p.n * p.c; ++row) {
        const float bv = b[row % p.c];
        const float* xr = x + row * p.p;
        float* yr = y + row * p.p;
        for (int64_t q = 0; q < p.p; ++q) yr[q] = xr[q] + bv;
    }
}

void bias_add_backward(const float* dy, float* db, const BiasAddParams& p) {
    switch (p.mode) {
        case common::AccumMode::kTree: bias_grad_tree(dy, db, p); return;
    }
}

}  // namespace dt::kernels::cpu

// SPDX-License-Identifier: MIT
// Per-thread bodies of the CUDA elementwise kernels (kernels/cuda/elementwise.cu), host-device:
// each maps its grid position onto the elements it owns (a grid-stride loop) and applies the
// contract's per-element recipe, the same function the CPU kernel runs (relu_forward_element,
// sgd_update_element, ...), so the bits are the CPU's by construction. The CPU suite runs these
// bodies over whole launch grids (tests/kernels/cuda/elementwise_bodies_test.cpp).
#pragma once
#include <cstdint>

#include "kernels/adam.h"
#include "kernels/add.h"
#include "kernels/bias_add.h"
#include "kernels/common/accum_exact.h"
#include "kernels/common/atomic_max.h"
#include "kernels/common/divisor.h"
#include "kernels/common/grid.h"
#include "kernels/cuda/launch_shape.h"
#include "kernels/dropout.h"
#include "kernels/finite.h"
#include "kernels/gelu.h"
#include "kernels/init.h"
#include "kernels/relu.h"
#include "kernels/sgd.h"

namespace dt::kernels::cuda {

using common::GridPos;

DT_HD void gelu_forward_body(const GridPos& t, const float* x, float* y, int64_t n) {
    common::grid_stride(t, n, [&](int64_t i) { y[i] = gelu_forward_element(x[i]); });
}
DT_HD void gelu_backward_body(const GridPos& t, const float* x, const float* dy, float* dx,
                              int64_t n) {
    common::grid_stride(t, n, [&](int64_t i) { dx[i] = gelu_backward_element(x[i], dy[i]); });
}

DT_HD void relu_forward_body(const GridPos& t, const float* x, float* y, int64_t n) {
    common::grid_stride(t, n, [&](int64_t i) { y[i] = relu_forward_element(x[i]); });
}

DT_HD void relu_backward_body(const GridPos& t, const float* x, const float* dy, float* dx,
                              int64_t n) {
    common::grid_stride(t, n, [&](int64_t i) { dx[i] = relu_backward_element(x[i], dy[i]); });
}

DT_HD void add_forward_body(const GridPos& t, const float* a, const float* b, float* y, int64_t n) {
    common::grid_stride(t, n, [&](int64_t i) { y[i] = a[i] + b[i]; });  // ORDER: a + b
}

/// x (N, C, P) + b (C): element i is in channel (i / P) % C (`channel`: make_channel_of(P, C),
/// made by the launcher).
DT_HD void bias_add_forward_body(const GridPos& t, const float* x, const float* b, float* y,
                                 const BiasAddParams& p, const common::ChannelOf& channel) {
    common::grid_stride(t, p.n * p.c * p.p, [&](int64_t i) {
        y[i] = x[i] + b[channel(i)];  // ORDER: x + b
    });
}

/// One thread per group of 4 elements of a sample (one Philox draw), as on the CPU.
DT_HD void dropout_forward_body(const GridPos& t, const float* x, const int64_t* sample_ids,
                                float* y, uint8_t* mask, const DropoutParams& p) {
    const float scale = dropout_scale(p.p);
    common::grid_stride(t, p.N * dropout_groups(p), [&](int64_t g) {
        dropout_forward_group(g, x, sample_ids, y, mask, p, scale);
    });
}

DT_HD void dropout_backward_body(const GridPos& t, const float* dy, const uint8_t* mask, float* dx,
                                 const DropoutParams& p) {
    const float scale = dropout_scale(p.p);
    common::grid_stride(
        t, p.N * p.D, [&](int64_t i) { dx[i] = dropout_backward_element(dy[i], mask[i], scale); });
}

DT_HD void init_uniform_body(const GridPos& t, float* v, const InitUniformParams& p) {
    common::grid_stride(t, p.n, [&](int64_t i) { v[i] = init_uniform_element(i, p); });
}

DT_HD void sgd_update_body(const GridPos& t, float* p, const float* grad, float* buf,
                           const SgdParams& q) {
    common::grid_stride(t, q.n, [&](int64_t k) { sgd_update_element(k, p, grad, buf, q); });
}

DT_HD void adam_update_body(const GridPos& t, float* p, const float* grad, float* m, float* v,
                            const AdamParams& q) {
    common::grid_stride(t, q.n, [&](int64_t k) { adam_update_element(k, p, grad, m, v, q); });
}

/// *word = max(*word, non_finite_mark(i, p[i])) for every non-finite p[i] (kernels/finite.h):
/// the maximum does not depend on which thread gets there first, so the answer is deterministic.
DT_HD void first_non_finite_body(const GridPos& t, const float* p, int64_t n,
                                 unsigned long long* word) {
    common::grid_stride(t, n, [&](int64_t i) {
        const uint32_t bits = common::float_to_bits(p[i]);
        if (non_finite_bits(bits)) common::atomic_max_u64(word, non_finite_mark(i, bits));
    });
}

// ---- many tensors in one launch: an optimizer step's parameters, a backward's scans ----
// Up to kBatchItems items go by value in the kernel's parameters (16 AdamTensors: 1.4 KiB of the
// 4 KiB a launch may pass): blockIdx.y picks the item, and the x blocks stride over its elements,
// enough of them for the batch's largest item (the others' extra blocks find no element). Each
// item's elements are its own (an update) or max-combined (a scan): no grid changes a bit.
inline constexpr int kBatchItems = 16;

template <class Item>
struct ItemBatch {
    Item item[kBatchItems];
    int count = 0;
};

/// One buffer of a batched non-finite scan and the word its answer goes to.
struct ScanItem {
    const float* p = nullptr;
    int64_t n = 0;
    unsigned long long* word = nullptr;
};

DT_HD int64_t item_elements(const AdamTensor& a) { return a.q.n; }
DT_HD int64_t item_elements(const SgdTensor& s) { return s.q.n; }
DT_HD int64_t item_elements(const ScanItem& s) { return s.n; }

DT_HD void item_body(const GridPos& t, const AdamTensor& a) {
    adam_update_body(t, a.p, a.grad, a.m, a.v, a.q);
}
DT_HD void item_body(const GridPos& t, const SgdTensor& s) {
    sgd_update_body(t, s.p, s.grad, s.buf, s.q);
}
DT_HD void item_body(const GridPos& t, const ScanItem& s) {
    first_non_finite_body(t, s.p, s.n, s.word);
}

/// The launch of items[first .. first + kBatchItems) of count (fewer at the end).
template <class Item>
ItemBatch<Item> item_batch(const Item* items, int64_t count, int64_t first) {
    ItemBatch<Item> b;
    b.count = static_cast<int>(count - first < kBatchItems ? count - first : kBatchItems);
    for (int i = 0; i < b.count; ++i) b.item[i] = items[first + i];
    return b;
}

/// The x extent of a batch's grid: elementwise_blocks of its largest item.
template <class Item>
DT_HD uint32_t batch_blocks(const ItemBatch<Item>& b) {
    int64_t most = 0;
    for (int i = 0; i < b.count; ++i) {
        const int64_t n = item_elements(b.item[i]);
        most = n > most ? n : most;
    }
    return elementwise_blocks(most);
}

/// out[i] = exact_value(accs[i]). ORDER: none (integer work, then one rounding per element).
DT_HD void exact_round_body(const GridPos& t, const common::ExactAcc* accs, int64_t n, float* out) {
    common::grid_stride(t, n, [&](int64_t i) { out[i] = common::exact_value(accs[i]); });
}

}  // namespace dt::kernels::cuda

// SPDX-License-Identifier: MIT
// bias_add on the CPU (recipes in kernels/bias_add.h). Forward: rows (s, c) split statically.
// bias.grad: each channel is owned by one loop iteration; its per-sample leaves are sequential
// sums, computed 8 samples at a time as 8 interleaved (independent) chains for instruction-level
// parallelism, then pushed into the channel's tree in sample order. The kahan, exact and
// permuted modes keep that structure (channel per iteration); the atomic mode has threads own
// groups of samples instead (8 channels' partials as interleaved chains), atomic-added into db.
// A (N, C) matrix's tree (P = 1) runs per chunk of channels instead: each sample's row of leaves
// is pushed on a tree stack of rows, every channel's tree at once (the same bits).
#include "kernels/bias_add.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/cpu/isa_variants.h"
#include "kernels/exact_rows.h"

namespace dt::kernels::cpu {

namespace {

constexpr int64_t kGroup = 8;  // samples whose leaves are computed together (no effect on bits)

constexpr int64_t kRowChunk = 64;   // channels per item of the P = 1 tree

/// Channels c0 .. c0 + len - 1 of a (N, C) matrix: leaf_s = +0 + dy[s, c] pushed in sample
/// order on a stack of rows (slots rows of kRowChunk); ORDER: the tree of reduce_tree.h.
DT_ISA_BODY void bias_grad_rows_body(const float* dy, float* db, const BiasAddParams& p, int64_t c0,
                                     int64_t len, float* stack) {
    for (int64_t s = 0; s < p.n; ++s) {
        float* leaf = stack + common::tree_leaf_slot(s) * kRowChunk;
        const float* row = dy + s * p.c + c0;
        for (int64_t i = 0; i < len; ++i) leaf[i] = 0.0f + row[i];  // ORDER: leaf from +0
        common::tree_push(stack, kRowChunk, 0, len, s);
    }
    common::tree_finish(stack, kRowChunk, 0, len, p.n);
    for (int64_t i = 0; i < len; ++i) db[c0 + i] = stack[i];
}
DT_ISA_FLAT_VARIANTS(void, bias_grad_rows,
                     (const float* dy, float* db, const BiasAddParams& p, int64_t c0, int64_t len,
                      float* stack),
                     (dy, db, p, c0, len, stack))

void bias_grad_tree(const float* dy, float* db, const BiasAddParams& p) {
    if (p.p == 1 && p.n >= 1) {
        const int64_t chunks = (p.c + kRowChunk - 1) / kRowChunk;
        const int slots = common::tree_slots(p.n);
#pragma omp parallel for schedule(static) if (chunks > 1 && p.n * p.c > 32768)
        for (int64_t k = 0; k < chunks; ++k) {
            thread_local std::vector<float> t_stack;
            if (static_cast<int64_t>(t_stack.size()) < slots * kRowChunk)
                t_stack.resize(static_cast<std::size_t>(slots * kRowChunk));
            bias_grad_rows(dy, db, p, k * kRowChunk, std::min(kRowChunk, p.c - k * kRowChunk),
                           t_stack.data());
        }
        return;
    }
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

// ---- kahan: compensated leaves, combined by the tree with kahan_merge ----
void bias_grad_kahan(const float* dy, float* db, const BiasAddParams& p) {
#pragma omp parallel for schedule(static) if (p.n * p.c * p.p > 32768)
    for (int64_t c = 0; c < p.c; ++c) {
        common::KahanTreeSum tree;
        common::kahan_tree_sum_init(tree);
        for (int64_t s0 = 0; s0 < p.n; s0 += kGroup) {
            const int64_t g = std::min(p.n - s0, kGroup);
            common::KahanSum leaf[kGroup];
            common::kahan_init_row(leaf, kGroup);  // ORDER: each leaf starts at (+0, +0)
            for (int64_t q = 0; q < p.p; ++q)
                for (int64_t j = 0; j < g; ++j)  // ORDER: positions ascending per leaf
                    common::kahan_add(leaf[j], dy[((s0 + j) * p.c + c) * p.p + q]);
            for (int64_t j = 0; j < g; ++j) common::kahan_tree_sum_push(tree, leaf[j]);  // s
        }
        db[c] = common::kahan_value(common::kahan_tree_sum_finish(tree));
    }
}

// ---- exact: every element of the channel into one ExactAcc, rounded once ----
// ORDER: none (integer accumulation). The channel's (N, P) block goes through exact_add_columns
// (each position's N terms in one int64, folded once; kernels/exact_rows.h).
void bias_grad_exact(const float* dy, float* db, const BiasAddParams& p) {
#pragma omp parallel for schedule(static) if (p.n * p.c * p.p > 32768)
    for (int64_t c = 0; c < p.c; ++c) {
        common::ExactAcc acc;
        common::exact_init(acc);
        exact_add_columns(acc, dy + c * p.p, p.c * p.p, p.n, p.p);
        if (p.exact_out != nullptr) {
            common::exact_merge(p.exact_out[c], acc);  // a part of a batch: unrounded
        } else {
            db[c] = common::exact_value(acc);
        }
    }
}

// ---- permuted: the tree mode's leaves, summed from +0 in a seeded order of the samples ----
void bias_grad_permuted(const float* dy, float* db, const BiasAddParams& p) {
    std::vector<uint32_t> order(static_cast<std::size_t>(p.n));
    common::permute_order(order.data(), p.n, p.accum.permute_key);
#pragma omp parallel for schedule(static) if (p.n * p.c * p.p > 32768)
    for (int64_t c = 0; c < p.c; ++c) {
        thread_local std::vector<float> t_leaves;
        if (static_cast<int64_t>(t_leaves.size()) < p.n)
            t_leaves.resize(static_cast<std::size_t>(p.n));
        float* leaves = t_leaves.data();
        for (int64_t s0 = 0; s0 < p.n; s0 += kGroup) {
            const int64_t g = std::min(p.n - s0, kGroup);
            float leaf[kGroup] = {};  // ORDER: each leaf starts at +0, positions ascending
            for (int64_t q = 0; q < p.p; ++q)
                for (int64_t j = 0; j < g; ++j)
                    leaf[j] = leaf[j] + dy[((s0 + j) * p.c + c) * p.p + q];
            for (int64_t j = 0; j < g; ++j) leaves[s0 + j] = leaf[j];
        }
        db[c] = common::permuted_sum(leaves, order.data(), p.n);  // ORDER: accum_permuted.h
    }
}

// ---- atomic: split-K, group partials atomic-added into the zeroed db ----
// No ORDER on purpose. Parallel whenever there are 2+ groups (the mode's point is the race).
void bias_grad_atomic(const float* dy, float* db, const BiasAddParams& p) {
    std::fill(db, db + p.c, 0.0f);
    const int64_t groups = (p.n + kBiasAddAtomicGroup - 1) / kBiasAddAtomicGroup;
#pragma omp parallel for schedule(static) if (groups > 1 && !omp_in_parallel())
    for (int64_t gi = 0; gi < groups; ++gi) {
        const int64_t s0 = gi * kBiasAddAtomicGroup, s1 = std::min(p.n, s0 + kBiasAddAtomicGroup);
        for (int64_t c0 = 0; c0 < p.c; c0 += kGroup) {  // 8 channels as independent chains
            const int64_t g = std::min(p.c - c0, kGroup);
            float part[kGroup] = {};  // +0, then samples in order, positions ascending
            for (int64_t s = s0; s < s1; ++s) {
                const float* ds = dy + (s * p.c + c0) * p.p;
                for (int64_t q = 0; q < p.p; ++q)
                    for (int64_t j = 0; j < g; ++j) part[j] = part[j] + ds[j * p.p + q];
            }
            for (int64_t j = 0; j < g; ++j) common::atomic_add_float(db + c0 + j, part[j]);
        }
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
    switch (p.accum.mode) {
        case common::AccumMode::kTree: bias_grad_tree(dy, db, p); return;
        case common::AccumMode::kKahan: bias_grad_kahan(dy, db, p); return;
        case common::AccumMode::kExact: bias_grad_exact(dy, db, p); return;
        case common::AccumMode::kPermuted: bias_grad_permuted(dy, db, p); return;
        case common::AccumMode::kAtomic: bias_grad_atomic(dy, db, p); return;
    }
}

}  // namespace dt::kernels::cpu

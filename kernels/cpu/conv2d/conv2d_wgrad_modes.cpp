// SPDX-License-Identifier: MIT
// conv.wgrad in the kahan, exact, permuted and atomic modes (recipes in kernels/conv2d.h). Every
// mode uses the tree mode's per-sample leaf (wgrad_group_leaf of one sample: a GEMM, leaf
// (Co, RL) over the live rows, the same bits); only the combination across samples differs. The
// deterministic modes compute leaves in waves of kWave samples (samples across threads) and then
// combine the wave into per-element state, slices of kSlice elements across threads; the atomic
// mode adds each group partial into a shared buffer as soon as it is computed. The exact mode
// takes conv2d_wgrad_exact_direct.cpp or, on small maps, conv2d_wgrad_exact_tiled.cpp where they
// apply (the same bits).
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/cpu/conv2d/conv2d_internal.h"
#include "kernels/exact_rows.h"

namespace dt::kernels::cpu::conv2d_internal {

namespace {

/// The calling thread's buffer for a wave of leaves (one per thread, shared by the modes).
float* wave_buffer(int64_t n) {
    thread_local std::vector<float> t_leaves;
    return scratch(t_leaves, n);
}

/// Computes the leaves of samples sample_at(0), sample_at(1), ..., sample_at(N-1) in waves and
/// calls combine(k0, wn, leaves, lo, hi) for every slice of each wave: leaves + j * L is the
/// leaf (Co, R) of sample sample_at(k0 + j), j < wn. Slices run across threads; a slice sees the
/// wave's leaves in k order, so any per-element recipe in k order is thread-count independent.
template <class SampleAt, class Combine>
void leaf_waves(const float* x, const float* dy, const Geometry& g, SampleAt&& sample_at,
                Combine&& combine) {
    const Conv2dParams& p = *g.p;
    const int64_t L = p.co * g.RL;
    float* leaves = wave_buffer(std::min(kWave, p.n) * L);
    for (int64_t k0 = 0; k0 < p.n; k0 += kWave) {
        const int64_t wn = std::min(kWave, p.n - k0);
        for_each_sample(wn, [&](int64_t j, bool par) {
            const int64_t s = sample_at(k0 + j);
            wgrad_group_leaf(x, dy, s, s + 1, g, leaves + j * L, par);
        });
        for_each_slice(L, [&](int64_t lo, int64_t hi) { combine(k0, wn, leaves, lo, hi); });
    }
}

}  // namespace

// ---- kahan: the tree of the tree mode, with kahan_merge over (leaf, +0) ----
void conv2d_wgrad_kahan(const float* x, const float* dy, float* dw, const Conv2dParams& p) {
    const Geometry g(p);
    const int64_t L = p.co * g.RL;
    thread_local std::vector<common::KahanSum> t_slots;
    const int64_t need = common::tree_slots(p.n) * L;
    if (static_cast<int64_t>(t_slots.size()) < need) t_slots.resize(static_cast<std::size_t>(need));
    common::KahanSum* slots = t_slots.data();
    leaf_waves(
        x, dy, g, [](int64_t k) { return k; },
        [&](int64_t k0, int64_t wn, const float* leaves, int64_t lo, int64_t hi) {
            for (int64_t j = 0; j < wn; ++j) {  // ORDER: leaves enter the tree in sample order
                const int64_t count = k0 + j;
                common::KahanSum* slot = slots + common::tree_leaf_slot(count) * L;
                const float* leaf = leaves + j * L;
                for (int64_t i = lo; i < hi; ++i) slot[i] = common::KahanSum{leaf[i], 0.0f};
                common::kahan_tree_push(slots, L, lo, hi, count);
            }
        });
    for_each_slice(
        L, [&](int64_t lo, int64_t hi) { common::kahan_tree_finish(slots, L, lo, hi, p.n); });
    write_wgrad(slots, dw, g, [](const common::KahanSum& k) { return common::kahan_value(k); });
}

// ---- exact: one ExactAcc per element, every leaf added (exact_add_rows: at most one unit per
// leaf, N < 2^31: no normalisation) ----
void conv2d_wgrad_exact(const float* x, const float* dy, float* dw, const Conv2dParams& p) {
    const Geometry g(p);
    if (conv2d_wgrad_exact_direct(x, dy, dw, g)) return;  // (both also for exact_out)
    if (conv2d_wgrad_exact_tiled(x, dy, dw, g)) return;
    const int64_t L = p.co * g.RL;
    thread_local std::vector<common::ExactAcc> t_acc;
    if (static_cast<int64_t>(t_acc.size()) < L) t_acc.resize(static_cast<std::size_t>(L));
    common::ExactAcc* acc = t_acc.data();
    for_each_slice(L, [&](int64_t lo, int64_t hi) { common::exact_init_row(acc + lo, hi - lo); });
    leaf_waves(
        x, dy, g, [](int64_t k) { return k; },
        [&](int64_t, int64_t wn, const float* leaves, int64_t lo, int64_t hi) {
            // ORDER: none (integer accumulation; the result depends on the multiset of leaves).
            exact_add_rows(acc + lo, leaves + lo, L, wn, hi - lo);
        });
    if (p.exact_out != nullptr) {  // a part of a batch: the unrounded sums, in dw's layout
        for (int64_t o = 0; o < p.co; ++o)
            for (int64_t j = 0; j < g.RL; ++j)
                common::exact_merge(p.exact_out[o * g.R + g.live[j]], acc[o * g.RL + j]);
        return;
    }
    write_wgrad(acc, dw, g, [](const common::ExactAcc& a) { return common::exact_value(a); });
}

// ---- permuted: leaves added from +0 in the order permute_order(N, key) ----
void conv2d_wgrad_permuted(const float* x, const float* dy, float* dw, const Conv2dParams& p) {
    const Geometry g(p);
    const int64_t L = p.co * g.RL;
    thread_local std::vector<uint32_t> t_order;
    t_order.resize(static_cast<std::size_t>(p.n));
    common::permute_order(t_order.data(), p.n, p.accum.permute_key);
    const uint32_t* order = t_order.data();
    thread_local std::vector<float> t_acc;
    float* acc = scratch(t_acc, L);
    for_each_slice(L, [&](int64_t lo, int64_t hi) { std::fill(acc + lo, acc + hi, 0.0f); });
    leaf_waves(
        x, dy, g, [order](int64_t k) { return static_cast<int64_t>(order[k]); },
        [&](int64_t, int64_t wn, const float* leaves, int64_t lo, int64_t hi) {
            // ORDER: acc = +0 + leaf(order[0]) + leaf(order[1]) + ... (wave j = step k0 + j)
            for (int64_t j = 0; j < wn; ++j)
                common::permuted_accumulate(acc, leaves + j * L, lo, hi);
        });
    write_wgrad(acc, dw, g, [](float v) { return v; });
}

// ---- atomic: split-K over fixed groups of kConv2dAtomicGroup samples ----
// No ORDER on purpose. Threads own groups; a group's partial (Co, R) is one GEMM sum continued
// over its samples in order (the GEMM accumulates into the thread's buffer), then atomic-added
// into the zeroed shared buffer. A thread starts its adds at its own offset (t * L / T, then
// wraps), so threads do not fight over the same cache lines in lockstep; which partial lands
// first on an element is still up to thread timing.
void conv2d_wgrad_atomic(const float* x, const float* dy, float* dw, const Conv2dParams& p) {
    const Geometry g(p);
    const int64_t L = p.co * g.RL, groups = (p.n + kConv2dAtomicGroup - 1) / kConv2dAtomicGroup;
    thread_local std::vector<float> t_acc;
    float* acc = scratch(t_acc, L);
    std::fill(acc, acc + L, 0.0f);
    for_each_sample(groups, [&](int64_t gi, bool par) {
        thread_local std::vector<float> t_part;
        float* part = scratch(t_part, L);
        const int64_t s0 = gi * kConv2dAtomicGroup, s1 = std::min(p.n, s0 + kConv2dAtomicGroup);
        wgrad_group_leaf(x, dy, s0, s1, g, part, par);
        const int64_t start =
            omp_get_num_threads() > 1 ? (L * omp_get_thread_num() / omp_get_num_threads()) : 0;
        common::atomic_add_row(acc + start, part + start, L - start);
        common::atomic_add_row(acc, part, start);
    });
    write_wgrad(acc, dw, g, [](float v) { return v; });
}

}  // namespace dt::kernels::cpu::conv2d_internal

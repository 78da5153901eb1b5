// SPDX-License-Identifier: MIT
// The global gradient norm on the CPU (kernels/grad_norm.h): the leaves in parallel, each owned
// by one thread (schedule(static): the split never changes a leaf), then combined in the mode's
// order by one thread; exact sums every square into a per-thread ExactAcc and merges them (an
// integer sum: any split, the same bits). Clipping is elementwise.
#include "kernels/grad_norm.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/reduce_tree.h"

namespace dt::kernels::cpu {

namespace {

using common::AccumMode;

/// first[b] = the first leaf of buffer b; first[count] = L.
std::vector<int64_t> first_leaves(const GradBuffer* b, int64_t count) {
    std::vector<int64_t> first(static_cast<std::size_t>(count) + 1, 0);
    for (int64_t k = 0; k < count; ++k) first[k + 1] = first[k] + grad_norm_leaves(b[k].n);
    return first;
}

/// f(buffer, chunk) for every leaf l, the leaves split statically over the threads.
template <class F>
void for_each_leaf(const std::vector<int64_t>& first, F&& f) {
    const int64_t leaves = first.back();
#pragma omp parallel for schedule(static) if (leaves > 4)
    for (int64_t l = 0; l < leaves; ++l) {
        const int64_t k = std::upper_bound(first.begin(), first.end(), l) - first.begin() - 1;
        f(l, k, l - first[k]);
    }
}

}  // namespace

void grad_norm_sq_each(const GradBuffer* b, int64_t count, float* total, const GradNormParams& p) {
    const std::vector<int64_t> first = first_leaves(b, count);
    const int64_t leaves = first.back();
    const AccumMode mode = p.accum.mode;
    if (mode == AccumMode::kExact) {
        std::vector<common::ExactAcc> accs(static_cast<std::size_t>(omp_get_max_threads()));
        for (common::ExactAcc& a : accs) common::exact_init(a);
        for_each_leaf(first, [&](int64_t, int64_t k, int64_t c) {
            common::ExactAcc& a = accs[static_cast<std::size_t>(omp_get_thread_num())];
            common::exact_merge(a, grad_norm_exact_leaf(b[k].g, b[k].n, c));
            common::exact_normalise(a);  // a unit or two a limb: headroom for any count
        });
        for (std::size_t t = 1; t < accs.size(); ++t) common::exact_merge(accs[0], accs[t]);
        *total = common::exact_value(accs[0]);
        return;
    }
    if (mode == AccumMode::kKahan) {
        std::vector<common::KahanSum> sums(static_cast<std::size_t>(leaves));
        for_each_leaf(first, [&](int64_t l, int64_t k, int64_t c) {
            common::KahanSum s = common::kahan_zero();
            const int64_t lo = c * kGradNormChunk, hi = std::min(lo + kGradNormChunk, b[k].n);
            for (int64_t i = lo; i < hi; ++i) common::kahan_add(s, b[k].g[i] * b[k].g[i]);
            sums[l] = s;
        });
        *total = common::kahan_value(common::kahan_tree_combine(sums.data(), leaves));
        return;
    }
    if (mode == AccumMode::kAtomic) {  // each leaf raced into the total as it is done
        *total = 0.0f;
        for_each_leaf(first, [&](int64_t, int64_t k, int64_t c) {
            common::atomic_add_float(total, grad_norm_leaf(b[k].g, b[k].n, c));
        });
        return;
    }
    std::vector<float> sums(static_cast<std::size_t>(leaves));
    for_each_leaf(first, [&](int64_t l, int64_t k, int64_t c) {
        sums[l] = grad_norm_leaf(b[k].g, b[k].n, c);
    });
    if (mode == AccumMode::kTree) {
        *total = common::reduce_tree_combine(sums.data(), leaves);
        return;
    }
    std::vector<uint32_t> order(static_cast<std::size_t>(leaves));
    common::permute_order(order.data(), leaves, p.accum.permute_key);
    *total = common::permuted_sum(sums.data(), order.data(), leaves);
}

void grad_clip_each(const GradBuffer* b, int64_t count, const float* total, float max_norm) {
    const float t = *total;
    for (int64_t k = 0; k < count; ++k) {
        float* g = b[k].g;
#pragma omp parallel for schedule(static) if (b[k].n > 65536)
        for (int64_t i = 0; i < b[k].n; ++i) g[i] = grad_clip_element(g[i], t, max_norm);
    }
}

}  // namespace dt::kernels::cpu

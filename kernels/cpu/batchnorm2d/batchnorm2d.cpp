// Batch normalisation on the CPU; recipe, modes and ORDER in kernels/batchnorm2d.h. Per-(n, c)
// leaves are computed in parallel (each row owned by one iteration), then each channel's N
// leaves are combined as the AccumSpec says (tree, kahan tree, permuted order, atomic adds); the
// exact mode adds every term to per-(channel, sample block) superaccumulators instead. The
// elementwise passes own one (n, c) row each.
#include "kernels/batchnorm2d.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/cpu/batchnorm2d/batchnorm2d_rows.h"
#include "kernels/exact_rows.h"

namespace dt::kernels::cpu {

namespace {

using common::AccumMode;
using common::ExactAcc;
using common::KahanSum;
using namespace batchnorm2d_rows;  // the row sums and the terms (batchnorm2d_rows.h)

// kExact. Work items are (channel c, block of ns consecutive samples) of about kExactItem terms
// (at least 4 items per thread when the shape allows), long enough for exact_add_lanes (int64
// lane sums, kernels/exact_rows.h) to amortise its folds; an item writes its terms to a
// thread-local buffer and adds them to its own ExactAcc (one per sum). Then the items of a
// channel are merged. ORDER: none (integer accumulation, one rounding in exact_value): the
// result does not depend on the blocking, the threads or the sample order, so the blocking may
// follow the thread count.
constexpr int64_t kExactItem = 32768;

// What a call does with its totals besides returning them (a part of a larger batch,
// kernels/batchnorm2d.h): `local` receives this part's own totals (before the hook completes
// them), sink[s] (exact mode) gets this part's unrounded total of sum s added per channel.
template <int S>
struct PartOut {
    float* local = nullptr;
    ExactAcc* sink[S] = {};
};

template <int S, typename MakeRow>
void channel_totals_exact(const BatchNorm2dParams& p, float* totals, MakeRow make_row,
                          const PartOut<S>& out) {
    const int64_t N = p.N, C = p.C, HW = p.HW, hw1 = std::max<int64_t>(HW, 1);
    const bool parallel = N * C * HW >= kParallelMin;
    const int64_t threads = parallel ? omp_get_max_threads() : 1;
    const int64_t min_blocks = (4 * threads + C - 1) / C;  // blocks per channel for balance
    int64_t ns = std::clamp<int64_t>((kExactItem + hw1 - 1) / hw1, 1, std::max<int64_t>(N, 1));
    ns = std::max<int64_t>(1, std::min(ns, (N + min_blocks - 1) / min_blocks));
    const int64_t nb = (N + ns - 1) / ns, items = C * nb;
    std::vector<ExactAcc> part(static_cast<std::size_t>(items * S));
#pragma omp parallel if (parallel)
    {
        std::vector<float> buf(static_cast<std::size_t>(S * ns * HW));
#pragma omp for schedule(static)
        for (int64_t it = 0; it < items; ++it) {
            const int64_t c = it / nb, n0 = (it % nb) * ns, n1 = std::min(N, n0 + ns);
            const int64_t len = (n1 - n0) * HW;
            for (int64_t n = n0; n < n1; ++n) {
                const auto row = make_row(n * C + c);
                float* dst = buf.data() + (n - n0) * HW;
                for (int64_t i = 0; i < HW; ++i) {
                    float t[S];
                    row(i, t);
                    for (int s = 0; s < S; ++s) dst[s * len + i] = t[s];
                }
            }
            for (int s = 0; s < S; ++s) {
                ExactAcc& a = part[static_cast<std::size_t>(it * S + s)];
                common::exact_init(a);
                exact_add_lanes(a, buf.data() + s * len, len);  // leaves a normalised
            }
        }
    }
    std::vector<ExactAcc> accs(static_cast<std::size_t>(C * S));
    for (int64_t c = 0; c < C; ++c) {
        for (int s = 0; s < S; ++s) {
            ExactAcc& a = accs[static_cast<std::size_t>(c * S + s)];
            common::exact_init(a);
            for (int64_t b = 0; b < nb; ++b)  // nb <= N < 2^31 units: no normalisation needed
                common::exact_merge(a, part[static_cast<std::size_t>((c * nb + b) * S + s)]);
            if (out.sink[s] != nullptr) common::exact_merge(out.sink[s][c], a);
            if (out.local != nullptr) out.local[c * S + s] = common::exact_value(a);
        }
    }
    // The whole batch's totals: the parts' accumulators added (integers: any partition).
    if (p.parts != nullptr) p.parts->exact(p.parts->ctx, accs.data(), C * S);
    for (int64_t k = 0; k < C * S; ++k)
        totals[k] = common::exact_value(accs[static_cast<std::size_t>(k)]);
}

// channel_totals of the float modes, over this call's samples only.
template <int S, typename MakeRow>
void channel_totals_local(const BatchNorm2dParams& p, float* totals, MakeRow make_row) {
    const int64_t N = p.N, C = p.C;
    switch (p.accum.mode) {
        case AccumMode::kTree: {
            // ORDER: T over the N sample leaves of each channel (stride C * S).
            const std::vector<float> leaves = float_leaves<S>(p, make_row);
            for (int64_t c = 0; c < C; ++c)
                for (int s = 0; s < S; ++s)
                    totals[c * S + s] =
                        common::reduce_tree_combine(leaves.data() + c * S + s, N, C * S);
            return;
        }
        case AccumMode::kKahan: {
            const std::vector<KahanSum> leaves = kahan_leaves<S>(p, make_row);
            // ORDER: T_k (kahan_merge, left operand first) over the N leaves, then kahan_value.
            for (int64_t c = 0; c < C; ++c)
                for (int s = 0; s < S; ++s)
                    totals[c * S + s] = common::kahan_value(
                        common::kahan_tree_combine(leaves.data() + c * S + s, N, C * S));
            return;
        }
        case AccumMode::kExact:
            return;  // not here: channel_totals calls channel_totals_exact
        case AccumMode::kAtomic: {
            // No ORDER on purpose: leaves land in whatever order the threads finish them.
            for (int64_t k = 0; k < C * S; ++k) totals[k] = 0.0f;
            row_leaves<S>(N * C, p.HW, make_row, [totals, C](int64_t r, const PlainAcc* acc) {
                for (int s = 0; s < S; ++s)
                    common::atomic_add_float(totals + (r % C) * S + s, acc[s].v);
            });
            return;
        }
        case AccumMode::kPermuted: {
            const std::vector<float> leaves = float_leaves<S>(p, make_row);
            std::vector<uint32_t> order(static_cast<std::size_t>(N));
            common::permute_order(order.data(), N, p.accum.permute_key);
            // ORDER: +0 + leaf(order[0]) + leaf(order[1]) + ..., the same order for every total.
            for (int64_t c = 0; c < C; ++c)
                for (int s = 0; s < S; ++s)
                    totals[c * S + s] =
                        common::permuted_sum(leaves.data() + c * S + s, order.data(), N, C * S);
            return;
        }
    }
}

// The accumulation of sites bn.stats and bn.backward: totals[c * S + s] = the accumulation of
// t_s(n * C + c, i) over samples n and positions i, as p.accum says (kernels/batchnorm2d.h),
// over every part of the batch when p.parts is set.
template <int S, typename MakeRow>
void channel_totals(const BatchNorm2dParams& p, float* totals, MakeRow make_row,
                    const PartOut<S>& out = {}) {
    if (p.accum.mode == AccumMode::kExact) {
        channel_totals_exact<S>(p, totals, make_row, out);
        return;
    }
    channel_totals_local<S>(p, totals, make_row);
    if (out.local != nullptr) std::copy(totals, totals + p.C * S, out.local);
    // The whole batch's totals: the parts' totals combined as the site's mode says.
    if (p.parts != nullptr) p.parts->floats(p.parts->ctx, totals, p.C * S, p.accum);
}

}  // namespace

void batchnorm2d_invstd(const float* var, float* invstd, const BatchNorm2dParams& p) {
    // ORDER: invstd = 1 / sqrt(var + eps), sqrt and division correctly rounded.
    for (int64_t c = 0; c < p.C; ++c) invstd[c] = 1.0f / std::sqrt(var[c] + p.eps);
}

void batchnorm2d_stats(const float* x, float* mean, float* var, float* invstd,
                       const BatchNorm2dParams& p) {
    const float count = batchnorm2d_count(p);
    const int64_t C = p.C, HW = p.HW;
    // ORDER: mean = total(x) / count.
    channel_totals<1>(p, mean, [=](int64_t r) { return MeanRow{x + r * HW}; });
    for (int64_t c = 0; c < C; ++c) mean[c] = mean[c] / count;
    // ORDER: var = total((x - mean) * (x - mean)) / count (second pass, biased).
    channel_totals<1>(p, var, [=](int64_t r) { return VarRow{x + r * HW, mean[r % C]}; });
    for (int64_t c = 0; c < C; ++c) var[c] = var[c] / count;
    batchnorm2d_invstd(var, invstd, p);
}

void batchnorm2d_apply(const float* x, const float* mean, const float* invstd, const float* gamma,
                       const float* beta, float* y, const BatchNorm2dParams& p) {
    const int64_t rows = p.N * p.C, HW = p.HW;
#pragma omp parallel for schedule(static) if (rows * HW >= kParallelMin)
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t c = r % p.C;
        const float m = mean[c], is = invstd[c], g = gamma[c], b = beta[c];
        const float* xr = x + r * HW;
        float* yr = y + r * HW;
        // ORDER: ((x - mean) * invstd) * gamma + beta.
        for (int64_t i = 0; i < HW; ++i) yr[i] = ((xr[i] - m) * is) * g + b;
    }
}

void batchnorm2d_update_running(float* running_mean, float* running_var, const float* mean,
                                const float* var, float momentum, const BatchNorm2dParams& p) {
    const float count = batchnorm2d_count(p);
    const float keep = 1.0f - momentum;
    const float unbias = count / (count - 1.0f);
    for (int64_t c = 0; c < p.C; ++c) {
        // ORDER: (keep * running) + (momentum * batch), batch var unbiased as var * unbias.
        running_mean[c] = keep * running_mean[c] + momentum * mean[c];
        running_var[c] = keep * running_var[c] + momentum * (var[c] * unbias);
    }
}

void batchnorm2d_backward(const float* dy, const float* x, const float* mean, const float* invstd,
                          const float* gamma, float* dx, float* dgamma, float* dbeta, bool training,
                          const BatchNorm2dParams& p) {
    const int64_t C = p.C, HW = p.HW, rows = p.N * p.C;
    // totals[2c] = total(dy), totals[2c + 1] = total(dy * xhat), xhat = (x - mean) * invstd.
    // With parts, `local` keeps this part's totals (dgamma, dbeta) and `totals` those of the
    // whole batch (dx).
    std::vector<float> totals(static_cast<std::size_t>(2 * C)), local(totals.size());
    PartOut<2> out;
    out.local = local.data();
    out.sink[0] = p.exact_dbeta, out.sink[1] = p.exact_dgamma;
    channel_totals<2>(
        p, totals.data(),
        [=](int64_t r) {
            return BackwardRow{x + r * HW, dy + r * HW, mean[r % C], invstd[r % C]};
        },
        out);
    for (int64_t c = 0; c < C; ++c) {
        dbeta[c] = local[static_cast<std::size_t>(2 * c)];
        dgamma[c] = local[static_cast<std::size_t>(2 * c + 1)];
    }
    const float count = batchnorm2d_count(p);
    const float* tot = totals.data();
#pragma omp parallel for schedule(static) if (rows * HW >= kParallelMin)
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t c = r % C;
        const float* g = dy + r * HW;
        float* d = dx + r * HW;
        if (!training) {
            const float k = gamma[c] * invstd[c];
            for (int64_t i = 0; i < HW; ++i) d[i] = g[i] * k;  // ORDER: dy * (gamma * invstd)
            continue;
        }
        const float* xr = x + r * HW;
        const float m = mean[c], is = invstd[c], sb = tot[2 * c], sg = tot[2 * c + 1];
        const float k = (gamma[c] * is) / count;
        // ORDER: k * (((count * dy) - dbeta) - (xhat * dgamma)), xhat = (x - mean) * invstd.
        for (int64_t i = 0; i < HW; ++i) {
            const float xhat = (xr[i] - m) * is;
            d[i] = k * (((count * g[i]) - sb) - xhat * sg);
        }
    }
}

}  // namespace dt::kernels::cpu

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
#include "kernels/cpu/transpose_avx512.h"
#include "kernels/cpu_isa.h"
#include "kernels/exact_rows.h"

namespace dt::kernels::cpu {

namespace {

using common::AccumMode;
using common::ExactAcc;
using common::KahanSum;

constexpr int64_t kRowBlock = 8;         // rows summed side by side (ILP only, not order)
constexpr int64_t kParallelMin = 32768;  // elements below which one thread is faster

// Terms. make_row(r) returns the functor of row r = n * C + c (pointers and channel constants
// resolved once per row); row(i, t) writes t_s(r, i) for s < S. Defined with the kernels below.

// Row accumulators: PlainAcc is the float leaf of tree/atomic/permuted (acc = acc + t). Starts
// at +0.
struct PlainAcc {
    float v = 0.0f;
    void add(float t) { v = v + t; }
};

// ORDER: for every row r and sum s, acc(r, s) adds t_s(r, 0), t_s(r, 1), ..., t_s(r, len - 1) in
// index order, each row in its own accumulator; kRowBlock rows advance together only to hide add
// latency. emit(r, acc) receives the row's S finished accumulators (from the owning thread).
/// One row's leaves alone (the rows past the last full block).
template <int S, typename Row, typename Emit>
void one_row_leaf(const Row& row, int64_t r, int64_t len, Emit& emit) {
    PlainAcc acc[S] = {};
    for (int64_t i = 0; i < len; ++i) {
        float t[S];
        row(i, t);
        for (int s = 0; s < S; ++s) acc[s].add(t[s]);
    }
    emit(r, acc);
}

#if defined(__x86_64__)
/// Rows r0 .. r0 + 15 in the 16 lanes of a vector: lane l carries row r0 + l and performs
/// exactly its scalar adds (the same IEEE operations, in index order), so the bits are the
/// scalar loop's. Row::terms16 gives, per block of up to 16 positions, one vector of terms per
/// position (its rows' 16 x 16 blocks transposed in registers): each add advances 16 rows.
template <int S, typename Row, typename Emit>
__attribute__((target("avx512f"))) void row_leaves16(const Row* row, int64_t r0, int64_t len,
                                                     Emit& emit) {
    __m512 acc[S];
    for (int s = 0; s < S; ++s) acc[s] = _mm512_setzero_ps();
    for (int64_t i0 = 0; i0 < len; i0 += 16) {
        const int64_t n = std::min<int64_t>(16, len - i0);
        __m512 t[S][16];
        Row::terms16(row, i0, n, t);
        for (int64_t k = 0; k < n; ++k)  // ORDER: positions ascending, per lane (row)
            for (int s = 0; s < S; ++s) acc[s] = _mm512_add_ps(acc[s], t[s][k]);
    }
    alignas(64) float sums[S][16];
    for (int s = 0; s < S; ++s) _mm512_store_ps(sums[s], acc[s]);
    for (int l = 0; l < 16; ++l) {
        PlainAcc a[S];
        for (int s = 0; s < S; ++s) a[s].v = sums[s][l];
        emit(r0 + l, a);
    }
}
#endif

template <int S, typename MakeRow, typename Emit>
void row_leaves(int64_t rows, int64_t len, MakeRow make_row, Emit emit) {
    using Row = decltype(make_row(int64_t{0}));
#if defined(__x86_64__)
    if (cpu_isa() == CpuIsa::kAvx512 && len > 1) {  // the path in force (tests force each one)
        const int64_t groups = rows / 16;
#pragma omp parallel for schedule(static) if (rows * len >= kParallelMin)
        for (int64_t gr = 0; gr < groups; ++gr) {
            Row row[16];
            for (int l = 0; l < 16; ++l) row[l] = make_row(gr * 16 + l);
            row_leaves16<S>(row, gr * 16, len, emit);
        }
        for (int64_t r = groups * 16; r < rows; ++r) one_row_leaf<S>(make_row(r), r, len, emit);
        return;
    }
#endif
    const int64_t blocks = (rows + kRowBlock - 1) / kRowBlock;
#pragma omp parallel for schedule(static) if (rows * len >= kParallelMin)
    for (int64_t b = 0; b < blocks; ++b) {
        const int64_t r0 = b * kRowBlock;
        if (r0 + kRowBlock <= rows) {
            const Row row[kRowBlock] = {make_row(r0),     make_row(r0 + 1), make_row(r0 + 2),
                                        make_row(r0 + 3), make_row(r0 + 4), make_row(r0 + 5),
                                        make_row(r0 + 6), make_row(r0 + 7)};
            PlainAcc acc[kRowBlock][S] = {};
            for (int64_t i = 0; i < len; ++i) {
                for (int64_t j = 0; j < kRowBlock; ++j) {
                    float t[S];
                    row[j](i, t);
                    for (int s = 0; s < S; ++s) acc[j][s].add(t[s]);
                }
            }
            for (int64_t j = 0; j < kRowBlock; ++j) emit(r0 + j, acc[j]);
        } else {
            for (int64_t r = r0; r < rows; ++r) one_row_leaf<S>(make_row(r), r, len, emit);
        }
    }
}

// Float leaves: leaves[r * S + s] = row sum of t_s over row r (r = n * C + c).
template <int S, typename MakeRow>
std::vector<float> float_leaves(const BatchNorm2dParams& p, MakeRow make_row) {
    std::vector<float> leaves(static_cast<std::size_t>(p.N * p.C * S));
    float* l = leaves.data();
    row_leaves<S>(p.N * p.C, p.HW, make_row, [l](int64_t r, const PlainAcc* acc) {
        for (int s = 0; s < S; ++s) l[r * S + s] = acc[s].v;
    });
    return leaves;
}

// kKahan leaves: leaves[r * S + s] = kahan_add of t_s(r, 0), t_s(r, 1), ... from (+0, +0).
// Vectorised across rows: lane j of a 4-float vector carries row r0 + j and sees exactly the
// scalar kahan_add sequence of that row (same IEEE operations, no contraction), so the bits equal
// the scalar recipe; rows past the last group of four take the scalar kahan_add.
typedef float KVec __attribute__((vector_size(16)));

template <int S, typename MakeRow>
std::vector<KahanSum> kahan_leaves(const BatchNorm2dParams& p, MakeRow make_row) {
    using Row = decltype(make_row(int64_t{0}));
    const int64_t rows = p.N * p.C, len = p.HW, groups = (rows + 3) / 4;
    std::vector<KahanSum> leaves(static_cast<std::size_t>(rows * S));
    KahanSum* l = leaves.data();
#pragma omp parallel for schedule(static) if (rows * len >= kParallelMin)
    for (int64_t g = 0; g < groups; ++g) {
        const int64_t r0 = g * 4;
        if (r0 + 4 > rows) {
            for (int64_t r = r0; r < rows; ++r) {
                const Row row = make_row(r);
                KahanSum k[S];
                for (int s = 0; s < S; ++s) k[s] = common::kahan_zero();
                for (int64_t i = 0; i < len; ++i) {
                    float t[S];
                    row(i, t);
                    for (int s = 0; s < S; ++s) common::kahan_add(k[s], t[s]);
                }
                for (int s = 0; s < S; ++s) l[r * S + s] = k[s];
            }
            continue;
        }
        const Row row[4] = {make_row(r0), make_row(r0 + 1), make_row(r0 + 2), make_row(r0 + 3)};
        KVec sum[S] = {}, comp[S] = {};
        for (int64_t i = 0; i < len; ++i) {
            float t[4][S];
            for (int j = 0; j < 4; ++j) row[j](i, t[j]);
            for (int s = 0; s < S; ++s) {
                // ORDER: kahan_add per lane: t = sum + x; err = two_sum_err(sum, x, t);
                // comp = comp + err; sum = t (accum_kahan.h).
                const KVec x = {t[0][s], t[1][s], t[2][s], t[3][s]};
                const KVec tt = sum[s] + x;
                const KVec bp = tt - sum[s];
                const KVec ap = tt - bp;
                comp[s] = comp[s] + ((sum[s] - ap) + (x - bp));
                sum[s] = tt;
            }
        }
        for (int j = 0; j < 4; ++j)
            for (int s = 0; s < S; ++s) l[(r0 + j) * S + s] = KahanSum{sum[s][j], comp[s][j]};
    }
    return leaves;
}

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

// The terms of the three sums (kernels/batchnorm2d.h), one functor per row. terms16 (AVX-512):
// the same terms for 16 rows at positions i0 .. i0 + n - 1, t[s][k] lane l = row l's term s at
// i0 + k, the same operations lane by lane.
#if defined(__x86_64__)
/// v[k] lane l = p[l][i0 + k] for k < n (the rows' blocks loaded, then transposed).
__attribute__((target("avx512f"))) inline void load16(const float* const* p, int64_t i0, int64_t n,
                                                      __m512 v[16]) {
    const auto m = static_cast<__mmask16>((1u << n) - 1u);
    for (int l = 0; l < 16; ++l) v[l] = _mm512_maskz_loadu_ps(m, p[l] + i0);
    transpose16x16(v);
}
#endif
struct MeanRow {  // t = x
    const float* x;
    void operator()(int64_t i, float* t) const { t[0] = x[i]; }
#if defined(__x86_64__)
    __attribute__((target("avx512f"))) static void terms16(const MeanRow* r, int64_t i0, int64_t n,
                                                           __m512 t[1][16]) {
        const float* p[16];
        for (int l = 0; l < 16; ++l) p[l] = r[l].x;
        load16(p, i0, n, t[0]);
    }
#endif
};
struct VarRow {  // t = (x - mean) * (x - mean)
    const float* x;
    float m;
    void operator()(int64_t i, float* t) const {
        const float d = x[i] - m;
        t[0] = d * d;
    }
#if defined(__x86_64__)
    __attribute__((target("avx512f"))) static void terms16(const VarRow* r, int64_t i0, int64_t n,
                                                           __m512 t[1][16]) {
        const float* p[16];
        alignas(64) float m[16];
        for (int l = 0; l < 16; ++l) p[l] = r[l].x, m[l] = r[l].m;
        load16(p, i0, n, t[0]);
        const __m512 mv = _mm512_load_ps(m);
        for (int k = 0; k < 16; ++k) {
            const __m512 d = _mm512_sub_ps(t[0][k], mv);
            t[0][k] = _mm512_mul_ps(d, d);
        }
    }
#endif
};
struct BackwardRow {  // t0 = dy, t1 = dy * ((x - mean) * invstd)
    const float* x;
    const float* dy;
    float m, is;
    void operator()(int64_t i, float* t) const {
        const float g = dy[i];
        t[0] = g;
        t[1] = g * ((x[i] - m) * is);
    }
#if defined(__x86_64__)
    __attribute__((target("avx512f"))) static void terms16(const BackwardRow* r, int64_t i0,
                                                           int64_t n, __m512 t[2][16]) {
        const float *px[16], *pd[16];
        alignas(64) float m[16], is[16];
        for (int l = 0; l < 16; ++l)
            px[l] = r[l].x, pd[l] = r[l].dy, m[l] = r[l].m, is[l] = r[l].is;
        __m512 xv[16];
        load16(px, i0, n, xv);
        load16(pd, i0, n, t[0]);
        const __m512 mv = _mm512_load_ps(m), iv = _mm512_load_ps(is);
        for (int k = 0; k < 16; ++k)
            t[1][k] = _mm512_mul_ps(t[0][k], _mm512_mul_ps(_mm512_sub_ps(xv[k], mv), iv));
    }
#endif
};

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

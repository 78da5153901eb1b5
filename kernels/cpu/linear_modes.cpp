// SPDX-License-Identifier: MIT
// linear.dgrad and linear.wgrad in the kahan, exact, permuted and atomic modes (recipes in
// kernels/linear.h; the tree mode is in linear.cpp).
// - wgrad (kahan, exact, permuted): dw cut into (row o, column chunk) pieces as in the tree mode,
//   each owned by one loop iteration with its own per-element state.
// - wgrad atomic: (sample group, block of rows) partials added into the zeroed dw under the
//   block's lock.
// - dgrad (kahan, exact): rows s owned by loop iterations, per-element state over the row.
// - dgrad permuted: one GEMM over copies of dy's columns and w's rows in the permuted order
//   (gemm_f32_k_fma then sums over o in exactly that order).
// - dgrad atomic: (row block, feature chunk) GEMM partials atomic-added into the zeroed dx.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/reduce_tree.h"
#include "kernels/exact_rows.h"
#include "kernels/cpu/linear_internal.h"
#include "kernels/cpu/isa_variants.h"
#include "kernels/gemm.h"

namespace dt::kernels::cpu::linear_internal {

namespace {

constexpr int64_t kRowBlock = 32;  // dx rows per atomic dgrad item

template <class T>
T* scratch(std::vector<T>& v, int64_t n) {
    if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<std::size_t>(n));
    return v.data();
}

bool big(const LinearParams& p) { return p.n * p.in * p.out > 65536; }

/// Runs fn(o, lo, len) for every (row o, column chunk) piece of dw, across threads when large.
template <class Fn>
void for_each_piece(const LinearParams& p, Fn&& fn) {
    const int64_t chunks = (p.in + kChunk - 1) / kChunk, units = chunks * p.out;
#pragma omp parallel for schedule(static) if (big(p))
    for (int64_t u = 0; u < units; ++u) {
        const int64_t o = u % p.out, lo = (u / p.out) * kChunk;
        fn(o, lo, std::min(kChunk, p.in - lo));
    }
}

/// leaf[i] = the kahan tree of 8 products g[t] * x[t * ldx + i]:
/// ((p0 (+) p1) (+) (p2 (+) p3)) (+) ((p4 (+) p5) (+) (p6 (+) p7)), each p as (p, +0), (+) =
/// kahan_merge; exactly what kahan_tree_push does to 8 aligned leaves (see linear.cpp).
DT_ISA_BODY void kahan_group_of_8_body(const float* g, const float* x, int64_t ldx, int64_t len,
                                       common::KahanSum* leaf) {
    for (int64_t i = 0; i < len; ++i) {
        common::KahanSum q[8];
        for (int t = 0; t < 8; ++t) q[t] = common::KahanSum{g[t] * x[t * ldx + i], 0.0f};
        common::kahan_merge(q[0], q[1]);
        common::kahan_merge(q[2], q[3]);
        common::kahan_merge(q[4], q[5]);
        common::kahan_merge(q[6], q[7]);
        common::kahan_merge(q[0], q[2]);
        common::kahan_merge(q[4], q[6]);
        common::kahan_merge(q[0], q[4]);
        leaf[i] = q[0];
    }
}
DT_ISA_VARIANTS(void, kahan_group_of_8,
                (const float* g, const float* x, int64_t ldx, int64_t len, common::KahanSum* leaf),
                (g, x, ldx, len, leaf))

/// acc[i] (+)= g * w[i] (kahan_add of the rounded product), i < n.
DT_ISA_BODY void kahan_axpy_body(common::KahanSum* acc, float g, const float* w, int64_t n) {
    for (int64_t i = 0; i < n; ++i) common::kahan_add(acc[i], g * w[i]);
}
DT_ISA_VARIANTS(void, kahan_axpy, (common::KahanSum* acc, float g, const float* w, int64_t n),
                (acc, g, w, n))

}  // namespace

// ---- linear.wgrad ----

void linear_wgrad_kahan(const float* x, const float* dy, float* dw, const LinearParams& p) {
    const int slots = common::tree_slots(p.n);
    const int64_t groups = p.n / 8;
    for_each_piece(p, [&](int64_t o, int64_t lo, int64_t len) {
        thread_local std::vector<common::KahanSum> t_stack;
        common::KahanSum* stack = scratch(t_stack, slots * kChunk);
        for (int64_t b = 0; b < groups; ++b) {  // ORDER: groups in sample order (see linear.cpp)
            float g[8];
            for (int t = 0; t < 8; ++t) g[t] = dy[(8 * b + t) * p.out + o];
            kahan_group_of_8(g, x + 8 * b * p.in + lo, p.in, len,
                             stack + common::tree_leaf_slot(b) * kChunk);
            common::kahan_tree_push(stack, kChunk, 0, len, b);
        }
        for (int64_t s = 8 * groups; s < p.n; ++s) {  // ORDER: remaining leaves in order
            common::KahanSum* leaf = stack + common::tree_leaf_slot(s) * kChunk;
            const float g = dy[s * p.out + o];
            const float* xr = x + s * p.in + lo;
            for (int64_t i = 0; i < len; ++i) leaf[i] = common::KahanSum{g * xr[i], 0.0f};
            common::kahan_tree_push(stack, kChunk, 0, len, s);
        }
        common::kahan_tree_finish(stack, kChunk, 0, len, p.n);
        common::kahan_value_row(stack, dw + o * p.in + lo, len);
    });
}

void linear_wgrad_exact(const float* x, const float* dy, float* dw, const LinearParams& p) {
    for_each_piece(p, [&](int64_t o, int64_t lo, int64_t len) {
        // The piece's N leaves g * x (one column per element), then one exact_sum_rows: an int64
        // sum per element rounded once, an accumulator only where that cannot hold the terms
        // (N x kChunk floats per thread: 256 KB at batch 128).
        thread_local std::vector<float> t_leaves;
        float* leaves = scratch(t_leaves, p.n * len);
        for (int64_t s = 0; s < p.n; ++s) {
            const float g = dy[s * p.out + o];
            const float* xr = x + s * p.in + lo;
            for (int64_t i = 0; i < len; ++i) leaves[s * len + i] = g * xr[i];
        }
        // ORDER: none (integer accumulation; N < 2^31 terms per element)
        if (p.exact_out != nullptr) {  // a part of a batch: the unrounded sums
            exact_add_rows(p.exact_out + o * p.in + lo, leaves, len, p.n, len);
        } else {
            exact_sum_rows(dw + o * p.in + lo, leaves, len, p.n, len);
        }
    });
}

void linear_wgrad_permuted(const float* x, const float* dy, float* dw, const LinearParams& p) {
    std::vector<uint32_t> order(static_cast<std::size_t>(p.n));
    common::permute_order(order.data(), p.n, p.accum.permute_key);
    for_each_piece(p, [&](int64_t o, int64_t lo, int64_t len) {
        float* acc = dw + o * p.in + lo;
        std::fill(acc, acc + len, 0.0f);
        for (int64_t k = 0; k < p.n; ++k) {  // ORDER: +0 + leaf(order[0]) + leaf(order[1]) ...
            const int64_t s = order[static_cast<std::size_t>(k)];
            const float g = dy[s * p.out + o];
            const float* xr = x + s * p.in + lo;
            for (int64_t i = 0; i < len; ++i) acc[i] = acc[i] + g * xr[i];
        }
    });
}

namespace {

// No ORDER on purpose: split-K over groups of kLinearAtomicGroup samples, groups across threads.
// A group's partials (+0, then the products in sample order, per element) are computed for a
// block of kAtomicRows dw rows at a time and added into the zeroed dw under that block's lock:
// an atomic add of the whole block, so the order of an element's partials is the order in
// which threads took the lock (timing).
constexpr int kAtomicRows = 4;

/// Eight samples' products added to R partial rows (part, rows ldp apart) in sample order:
/// part[r][i] = ((part[r][i] + g[r][0] * x0[i]) + g[r][1] * x1[i]) + ..., from +0 when kFirst.
/// The loop over i is outermost, so that it vectorizes.
template <int R, bool kFirst>
DT_ISA_BODY void atomic_partials_8(const float (*g)[8], const float* x, int64_t ldx, int64_t len,
                                   float* part, int64_t ldp) {
    const float* x0 = x;
    const float *x1 = x0 + ldx, *x2 = x1 + ldx, *x3 = x2 + ldx, *x4 = x3 + ldx;
    const float *x5 = x4 + ldx, *x6 = x5 + ldx, *x7 = x6 + ldx;
#pragma GCC ivdep  // part never overlaps x
    for (int64_t i = 0; i < len; ++i) {
        const float a0 = x0[i], a1 = x1[i], a2 = x2[i], a3 = x3[i];
        const float a4 = x4[i], a5 = x5[i], a6 = x6[i], a7 = x7[i];
        for (int r = 0; r < R; ++r) {
            float acc = kFirst ? 0.0f : part[r * ldp + i];
            acc = acc + g[r][0] * a0;
            acc = acc + g[r][1] * a1;
            acc = acc + g[r][2] * a2;
            acc = acc + g[r][3] * a3;
            acc = acc + g[r][4] * a4;
            acc = acc + g[r][5] * a5;
            acc = acc + g[r][6] * a6;
            acc = acc + g[r][7] * a7;
            part[r * ldp + i] = acc;
        }
    }
}

/// part[r * in + i] = +0 + dy[s0, o0 + r] * x[s0, i] + ... + dy[s1 - 1, o0 + r] * x[s1 - 1, i]
/// for r < R: products rounded, then added in sample order (8 samples at a time, the rest one
/// by one).
template <int R>
DT_ISA_BODY void atomic_partials(const float* x, const float* dy, const LinearParams& p,
                                 int64_t s0, int64_t s1, int64_t o0, float* part) {
    int64_t s = s0;
    for (; s + 8 <= s1; s += 8) {
        float g[R][8];
        for (int r = 0; r < R; ++r)
            for (int t = 0; t < 8; ++t) g[r][t] = dy[(s + t) * p.out + o0 + r];
        if (s == s0) {
            atomic_partials_8<R, true>(g, x + s * p.in, p.in, p.in, part, p.in);
        } else {
            atomic_partials_8<R, false>(g, x + s * p.in, p.in, p.in, part, p.in);
        }
    }
    if (s == s0)
        for (int64_t i = 0; i < R * p.in; ++i) part[i] = 0.0f;
    for (; s < s1; ++s)
        for (int r = 0; r < R; ++r) {
            const float g = dy[s * p.out + o0 + r];
            for (int64_t i = 0; i < p.in; ++i)
                part[r * p.in + i] = part[r * p.in + i] + g * x[s * p.in + i];
        }
}

/// One (group, row block) unit: its partials, then dw's rows += them under the block's lock.
DT_ISA_BODY void atomic_unit_body(const float* x, const float* dy, float* dw, const LinearParams& p,
                                  int64_t s0, int64_t s1, int64_t o0, int rows, float* part,
                                  std::atomic<bool>& lock) {
    if (rows == kAtomicRows) {
        atomic_partials<kAtomicRows>(x, dy, p, s0, s1, o0, part);
    } else {
        for (int r = 0; r < rows; ++r)
            atomic_partials<1>(x, dy, p, s0, s1, o0 + r, part + r * p.in);
    }
    while (lock.exchange(true, std::memory_order_acquire))
        while (lock.load(std::memory_order_relaxed)) {
        }
    float* out = dw + o0 * p.in;
    for (int64_t i = 0; i < rows * p.in; ++i) out[i] = out[i] + part[i];
    lock.store(false, std::memory_order_release);
}
DT_ISA_FLAT_VARIANTS(void, atomic_unit,
                     (const float* x, const float* dy, float* dw, const LinearParams& p, int64_t s0,
                      int64_t s1, int64_t o0, int rows, float* part, std::atomic<bool>& lock),
                     (x, dy, dw, p, s0, s1, o0, rows, part, lock))

}  // namespace

void linear_wgrad_atomic(const float* x, const float* dy, float* dw, const LinearParams& p) {
    std::fill(dw, dw + p.out * p.in, 0.0f);
    const int64_t groups = (p.n + kLinearAtomicGroup - 1) / kLinearAtomicGroup;
    const int64_t blocks = (p.out + kAtomicRows - 1) / kAtomicRows;
    std::vector<std::atomic<bool>> locks(static_cast<std::size_t>(blocks));
#pragma omp parallel if (groups > 1 && !omp_in_parallel())
    {
        thread_local std::vector<float> t_part;
        float* part = scratch(t_part, kAtomicRows * p.in);
        // Group-major units: each thread's static share spans every row block, so partials of
        // one element come from several threads.
#pragma omp for schedule(static)
        for (int64_t u = 0; u < groups * blocks; ++u) {
            const int64_t s0 = (u / blocks) * kLinearAtomicGroup, o0 = (u % blocks) * kAtomicRows;
            atomic_unit(x, dy, dw, p, s0, std::min(p.n, s0 + kLinearAtomicGroup), o0,
                        static_cast<int>(std::min<int64_t>(kAtomicRows, p.out - o0)), part,
                        locks[static_cast<std::size_t>(u % blocks)]);
        }
    }
}

// ---- linear.dgrad ----

void linear_dgrad_kahan(const float* dy, const float* w, float* dx, const LinearParams& p) {
#pragma omp parallel for schedule(static) if (big(p))
    for (int64_t s = 0; s < p.n; ++s) {
        thread_local std::vector<common::KahanSum> t_acc;
        common::KahanSum* acc = scratch(t_acc, p.in);
        common::kahan_init_row(acc, p.in);
        for (int64_t o = 0; o < p.out; ++o)  // ORDER: o ascending
            kahan_axpy(acc, dy[s * p.out + o], w + o * p.in, p.in);
        common::kahan_value_row(acc, dx + s * p.in, p.in);
    }
}

void linear_dgrad_exact(const float* dy, const float* w, float* dx, const LinearParams& p) {
#pragma omp parallel for schedule(static) if (big(p))
    for (int64_t s = 0; s < p.n; ++s) {
        thread_local std::vector<common::ExactAcc> t_acc;
        common::ExactAcc* acc = scratch(t_acc, p.in);
        common::exact_init_row(acc, p.in);
        for (int64_t o = 0; o < p.out; ++o) {  // ORDER: none (O < 2^31 adds per element)
            const float g = dy[s * p.out + o];
            const float* wr = w + o * p.in;
            for (int64_t i = 0; i < p.in; ++i) common::exact_add(acc[i], g * wr[i]);
        }
        common::exact_value_row(acc, dx + s * p.in, p.in);
    }
}

void linear_dgrad_permuted(const float* dy, const float* w, float* dx, const LinearParams& p) {
    std::vector<uint32_t> pi(static_cast<std::size_t>(p.out));
    common::permute_order(pi.data(), p.out, p.accum.permute_key);
    std::vector<float> dyp(static_cast<std::size_t>(p.n * p.out));
    std::vector<float> wp(static_cast<std::size_t>(p.out * p.in));
    for (int64_t k = 0; k < p.out; ++k) {
        const int64_t o = pi[static_cast<std::size_t>(k)];
        for (int64_t s = 0; s < p.n; ++s) dyp[s * p.out + k] = dy[s * p.out + o];
        std::memcpy(wp.data() + k * p.in, w + o * p.in, p.in * sizeof(float));
    }
    // ORDER: dx[s,i] = the fma chain over k ascending of dy[s,pi[k]] * w[pi[k],i] (gemm).
    gemm(dyp.data(), wp.data(), dx, GemmParams{.m = p.n, .n = p.in, .k = p.out});
}

// No ORDER on purpose: the chunks of one row block run round-robin on different threads.
void linear_dgrad_atomic(const float* dy, const float* w, float* dx, const LinearParams& p) {
    std::fill(dx, dx + p.n * p.in, 0.0f);
    const int64_t chunks = (p.out + kLinearAtomicChunk - 1) / kLinearAtomicChunk;
    const int64_t items = (p.n + kRowBlock - 1) / kRowBlock * chunks;
#pragma omp parallel for schedule(static, 1) if (items > 1 && !omp_in_parallel())
    for (int64_t it = 0; it < items; ++it) {
        const int64_t s0 = it / chunks * kRowBlock, o0 = it % chunks * kLinearAtomicChunk;
        const int64_t m = std::min(kRowBlock, p.n - s0);
        const int64_t kc = std::min(kLinearAtomicChunk, p.out - o0);
        thread_local std::vector<float> t_part;
        float* part = scratch(t_part, m * p.in);
        // part[s,i] = the fma chain from +0 over o in the chunk, ascending, of dy[s,o] * w[o,i]
        gemm(dy + s0 * p.out + o0, w + o0 * p.in, part,
             GemmParams{.m = m, .n = p.in, .k = kc, .lda = p.out, .parallel = false});
        common::atomic_add_row(dx + s0 * p.in, part, m * p.in);
    }
}

}  // namespace dt::kernels::cpu::linear_internal

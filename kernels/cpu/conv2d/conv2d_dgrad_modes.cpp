// SPDX-License-Identifier: MIT
// conv.dgrad in the kahan, exact, permuted and atomic modes (recipes in kernels/conv2d.h). The
// per-tap values t (sum over output channels, sequential in the GEMM) are the tree mode's bits;
// the mode decides how col2im accumulates the taps of an input element.
// - kahan, exact, permuted: as the tree mode, one sample per loop iteration (W^T dY_s into a
//   thread-local column buffer), then a col2im with per-element KahanSum / ExactAcc state or with
//   the taps in permuted order, over the zero-padded input whose border is dropped.
// - atomic: items (sample, kernel row) round-robin over threads, each a GEMM of the row's weights
//   (Ci*Kw, Co) with dY_s, the row's taps summed locally in order, the partial atomic-added into
//   the zeroed dx.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/cpu/conv2d/conv2d_internal.h"

namespace dt::kernels::cpu::conv2d_internal {

namespace {

/// Per-element state T over the padded input (Ci, Hp, Wp) of the calling thread, initialised.
template <class T, class Init>
T* padded_state(std::vector<T>& v, const Geometry& g, Init&& init) {
    const int64_t n = g.p->ci * g.hp * g.wp;
    if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) init(v[static_cast<std::size_t>(i)]);
    return v.data();
}

/// dxs[c, ih, iw] = value(state at the padded position of (c, ih, iw)).
template <class T, class Value>
void unpad(const T* st, float* dxs, const Geometry& g, Value&& value) {
    const Conv2dParams& p = *g.p;
    for (int64_t c = 0; c < p.ci; ++c)
        for (int64_t ih = 0; ih < p.h; ++ih) {
            const T* row = st + (c * g.hp + ih + p.pad) * g.wp + p.pad;
            float* out = dxs + (c * p.h + ih) * p.w;
            for (int64_t iw = 0; iw < p.w; ++iw) out[iw] = value(row[iw]);
        }
}

}  // namespace

/// The kahan and exact modes: per sample, a state T per padded input element (init), every tap
/// of dcol added in col2im's row order (add), then value() of each state into dx.
template <class T, class Init, class Add, class Value>
void dgrad_with_state(const float* dy, const float* w, float* dx, const Conv2dParams& p,
                      bool skip_pointwise, Init init, Add add, Value value) {
    const Geometry g(p);
    dgrad_per_sample(dy, w, dx, p, g, skip_pointwise, [&](const float* dcol, float* dxs) {
        thread_local std::vector<T> t_st;
        T* st = padded_state(t_st, g, init);
        const int64_t stride = g.p->stride;
        for_each_col2im_run(dcol, g, nullptr, [&](int64_t off, const float* src, int64_t n) {
            T* d = st + off;
            for (int64_t u = 0; u < n; ++u) add(d[u * stride], src[u]);
        });
        unpad(st, dxs, g, value);
    });
}

// ---- kahan: ORDER: kahan_add of the taps ascending from (+0, +0), then kahan_value ----
void conv2d_dgrad_kahan(const float* dy, const float* w, float* dx, const Conv2dParams& p) {
    dgrad_with_state<common::KahanSum>(
        dy, w, dx, p, true, [](common::KahanSum& k) { common::kahan_init(k); },
        [](common::KahanSum& k, float v) { common::kahan_add(k, v); },
        [](const common::KahanSum& k) { return common::kahan_value(k); });
}

// ---- exact: the exact sum of the taps rounded once (Kh*Kw adds per element at most) ----
// ORDER: none (integer accumulation). No pointwise shortcut: exact_value canonicalises NaN, so
// every element goes through it.
void conv2d_dgrad_exact(const float* dy, const float* w, float* dx, const Conv2dParams& p) {
    dgrad_with_state<common::ExactAcc>(
        dy, w, dx, p, false, [](common::ExactAcc& a) { common::exact_init(a); },
        [](common::ExactAcc& a, float v) { common::exact_add(a, v); },
        [](const common::ExactAcc& a) { return common::exact_value(a); });
}

// ---- permuted: ORDER: +0 + t(pi[0]) + t(pi[1]) + ..., pi = permute_order(Kh*Kw, key) ----
void conv2d_dgrad_permuted(const float* dy, const float* w, float* dx, const Conv2dParams& p) {
    const Geometry g(p);
    const int64_t kk = p.kh * p.kw;
    std::vector<uint32_t> pi(static_cast<std::size_t>(kk));
    common::permute_order(pi.data(), kk, p.accum.permute_key);
    std::vector<int64_t> rows(static_cast<std::size_t>(g.R));  // col2im row order
    for (int64_t c = 0, j = 0; c < p.ci; ++c)
        for (int64_t t = 0; t < kk; ++t) rows[j++] = c * kk + pi[t];
    dgrad_per_sample(dy, w, dx, p, g, true, [&](const float* dcol, float* dxs) {
        thread_local std::vector<float> t_dxp;
        float* dxp = p.pad == 0 ? dxs : scratch(t_dxp, p.ci * g.hp * g.wp);
        std::fill(dxp, dxp + p.ci * g.hp * g.wp, 0.0f);
        const int64_t stride = p.stride;
        for_each_col2im_run(dcol, g, rows.data(), [&](int64_t off, const float* src, int64_t n) {
            float* d = dxp + off;
            for (int64_t u = 0; u < n; ++u) d[u * stride] = d[u * stride] + src[u];
        });
        if (p.pad != 0) unpad(dxp, dxs, g, [](float v) { return v; });
    });
}

// ---- atomic: (sample, kernel row) partials, round-robin over threads, atomic-added into dx ----
// No ORDER on purpose: the Kh row partials of one element come from different threads at about
// the same time. An item (s, ki) computes the per-tap values of its Kw taps with one GEMM
// (A_ki[(c, kj), o] = w[o,c,ki,kj], K = Co sequential: the tree mode's t bits), accumulates them
// in a zeroed padded buffer in tap order (+0 + t(ki,0) + t(ki,1) + ...), and atomic-adds the
// buffer's rows that the kernel row reaches into the zeroed dx.
void conv2d_dgrad_atomic(const float* dy, const float* w, float* dx, const Conv2dParams& p) {
    const Geometry g(p);
    const int64_t P = g.P, xsz = p.ci * p.h * p.w, mk = p.ci * p.kw;
    const bool par = !omp_in_parallel();
#pragma omp parallel for schedule(static) if (par && p.n > 1)
    for (int64_t s = 0; s < p.n; ++s) std::fill(dx + s * xsz, dx + (s + 1) * xsz, 0.0f);
    // Per kernel row ki: A_ki (Ci*Kw, Co), packed once for all samples.
    const CpuIsa isa = cpu_isa();
    const GemmParams gp{.m = mk, .n = P, .k = p.co};
    const int64_t psz = gemm_packed_a_size(isa, gp);
    thread_local std::vector<float> t_wk, t_packed;
    float* wk = scratch(t_wk, mk * p.co);
    float* packed = scratch(t_packed, p.kh * psz);
    std::vector<GemmPackedA> a(static_cast<std::size_t>(p.kh));
    for (int64_t ki = 0; ki < p.kh; ++ki) {
        for (int64_t c = 0; c < p.ci; ++c)
            for (int64_t kj = 0; kj < p.kw; ++kj)
                for (int64_t o = 0; o < p.co; ++o)
                    wk[(c * p.kw + kj) * p.co + o] = w[((o * p.ci + c) * p.kh + ki) * p.kw + kj];
        a[static_cast<std::size_t>(ki)] = gemm_pack_a(isa, wk, packed + ki * psz, gp);
    }
    const int64_t items = p.n * p.kh, lpsz = p.ci * g.hp * g.wp;
#pragma omp parallel for schedule(static, 1) if (par && items > 1)
    for (int64_t it = 0; it < items; ++it) {
        const int64_t s = it / p.kh, ki = it % p.kh;
        thread_local std::vector<float> t_col, t_lp;
        float* col = scratch(t_col, mk * P);
        float* lp = scratch(t_lp, lpsz);
        const int64_t oh0 = first_valid(p.pad, ki, p.stride);
        const int64_t oh1 = end_valid(p.h, p.pad, ki, p.stride, p.ho);
        if (oh0 >= oh1) continue;  // a dead kernel row: all its taps land in the border
        GemmParams q = gp;
        q.parallel = false;
        gemm(a[static_cast<std::size_t>(ki)], dy + s * p.co * P, col, q);
        for (int64_t c = 0; c < p.ci; ++c)  // rows oh0..oh1-1 of lp, zeroed, then taps kj
            for (int64_t oh = oh0; oh < oh1; ++oh)
                std::fill_n(lp + (c * g.hp + oh * p.stride + ki) * g.wp, g.wp, 0.0f);
        for (int64_t c = 0; c < p.ci; ++c)
            for (int64_t kj = 0; kj < p.kw; ++kj) {  // tap order within the kernel row
                const float* src = col + (c * p.kw + kj) * P + oh0 * p.wo;
                for (int64_t oh = oh0; oh < oh1; ++oh, src += p.wo) {
                    float* d = lp + (c * g.hp + oh * p.stride + ki) * g.wp + kj;
                    for (int64_t ow = 0; ow < p.wo; ++ow)
                        d[ow * p.stride] = d[ow * p.stride] + src[ow];
                }
            }
        for (int64_t c = 0; c < p.ci; ++c)
            for (int64_t oh = oh0; oh < oh1; ++oh) {
                const int64_t ih = oh * p.stride - p.pad + ki;
                common::atomic_add_row(dx + ((s * p.ci + c) * p.h + ih) * p.w,
                                       lp + (c * g.hp + ih + p.pad) * g.wp + p.pad, p.w);
            }
    }
}

}  // namespace dt::kernels::cpu::conv2d_internal

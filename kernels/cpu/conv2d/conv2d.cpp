// SPDX-License-Identifier: MIT
// conv2d on the CPU: the entry points of kernels/conv2d.h (its recipes, one ORDER line per site
// and mode; reference kernels/ref/conv2d_ref.h): conv2d_forward, and conv2d_backward_data /
// conv2d_backward_weight, which dispatch by accumulation mode. Also here: the forward itself,
// the tree mode (detrain's default) of conv.dgrad (per sample W^T dY, then col2im) and of
// conv.wgrad (group leaves into the tree of common/reduce_tree.h), and the padded-sample helpers
// of conv2d_internal.h (which lists the folder's other files). How the convolution maps onto
// GEMMs: the section below the includes.
#include "kernels/conv2d.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/common/reduce_tree.h"
#include "kernels/cpu/conv2d/conv2d_internal.h"
#include "kernels/gemm.h"

// ---- the scheme: GEMMs on cpu::gemm over a zero-padded copy of each sample ----
// The copy xp (Ci, Hp, Wp) of each sample means no tap ever needs a bounds test:
//   xpad[r, q] = xp[rbase[r] + oh*stride*Wp + ow*stride], rbase[r] = (c*Hp + ki)*Wp + kj.
// - forward, stride 1: B row r is the contiguous run xp + rbase[r] ("flat" positions
//   q' = oh*Wp + ow, ow < Wp), read in place (GemmBRows); the Wp - Wo extra columns per row are
//   computed and dropped (they are separate outputs and never enter a kept sum). Other strides
//   gather B panels from xp.
// - wgrad: leaf (Co, R) = dY (Co, K) . col^T, K over one sample's or a chunk of samples'
//   positions (im2col col (R, K), read transposed by the GEMM's B packing). K runs over the real
//   positions only, so no padding position enters a sum.
// - dgrad: per sample W^T dY into a thread-local column buffer, then col2im into a padded buffer
//   whose border is dropped; the tree mode at stride 1 with a square kernel is instead the
//   forward convolution of dy with the flipped, transposed weights (packed straight from w:
//   conv2d_dgrad_tree_as_forward.cpp).
// - small maps (P < kChunkPositions): forward, dgrad and wgrad put a chunk of samples side by
//   side in one GEMM (conv2d_sample_chunks.cpp); the same ORDER, so the same bits.
// The accumulation modes other than tree live in conv2d_wgrad_modes.cpp and
// conv2d_dgrad_modes.cpp. Weights are packed once per call and shared by all samples. Samples
// are owned by loop iterations; with fewer samples than threads they run in order with a
// parallel GEMM instead (cpu::gemm's bits never depend on that).

namespace dt::kernels::cpu {

namespace conv2d_internal {

void pad_into(const float* xs, const Geometry& g, float* xp) {
    const Conv2dParams& p = *g.p;
    std::fill(xp, xp + p.ci * g.hp * g.wp, 0.0f);
    for (int64_t c = 0; c < p.ci; ++c)
        for (int64_t ih = 0; ih < p.h; ++ih)
            copy_run(xp + (c * g.hp + ih + p.pad) * g.wp + p.pad, xs + (c * p.h + ih) * p.w,
                     p.w);
}

const float* pad_sample(const float* xs, const Geometry& g) {
    if (g.p->pad == 0) return xs;
    thread_local std::vector<float> t_xp;
    float* xp = scratch(t_xp, g.p->ci * g.hp * g.wp);
    pad_into(xs, g, xp);
    return xp;
}

void fill_tap(const float* xp, const Geometry& g, int64_t r, int64_t q0, int64_t count,
              float* dst) {
    const Conv2dParams& p = *g.p;
    int64_t oh = q0 / p.wo, ow = q0 % p.wo;
    for (int64_t t = 0; t < count; ow = 0, ++oh) {
        const int64_t seg = std::min(p.wo - ow, count - t);
        const float* src = xp + g.rbase[r] + oh * p.stride * g.wp + ow * p.stride;
        if (p.stride == 1) {
            copy_run(dst + t, src, seg);
        } else {
            for (int64_t u = 0; u < seg; ++u) dst[t + u] = src[u * p.stride];
        }
        t += seg;
    }
}

const float* live_weights(const float* w, const Geometry& g) {
    if (g.all_live()) return w;
    thread_local std::vector<float> t_wl;
    float* wl = scratch(t_wl, g.p->co * g.RL);
    // Reads the whole weight (the dead columns too): split over threads when it is big.
    const bool par = g.p->co * g.R >= (int64_t{1} << 16) && !omp_in_parallel();
    parallel_for(par, g.p->co, [&](int64_t o) {
        for (int64_t i = 0; i < g.RL; ++i) wl[o * g.RL + i] = w[o * g.R + g.live[i]];
    });
    return wl;
}

GemmPackedA pack_shared_a(const float* a, const GemmParams& gp) {
    thread_local std::vector<float> t_apacked;
    const CpuIsa isa = cpu_isa();
    return gemm_pack_a(isa, a, scratch(t_apacked, gemm_packed_a_size(isa, gp)), gp);
}

}  // namespace conv2d_internal

namespace {

using namespace conv2d_internal;

struct Source {
    const float* xp;
    const Geometry* g;
};

/// Forward B, any stride: B[i, q] = xpad[live[i], q] (q = oh*Wo + ow).
void pack_gather(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nr, int64_t pw,
                 float* dst) {
    const auto* s = static_cast<const Source*>(ctx);
    for (int64_t k = 0; k < kc; ++k) {
        fill_tap(s->xp, *s->g, s->g->live[k0 + k], j0, nr, dst + k * pw);
        std::fill(dst + k * pw + nr, dst + (k + 1) * pw, 0.0f);
    }
}

#if defined(__x86_64__)
/// Stride 1 on the AVX-512 path: col2im gathered per input row instead of scattered per tap.
/// Lanes are 16 columns x of row (c, y); the vector starts at +0 and adds, for each live tap
/// (ki, kj) in ascending order, the dcol run of output row oh = y + pad - ki at ow = x + pad - kj
/// (a masked load: lanes whose ow falls outside [0, Wo) read +0). The same additions in the same
/// order as the scatter below: the sum starts at +0 and so is never -0, hence adding a masked
/// +0 leaves it unchanged. One store per 16 outputs instead of a read-modify-write per tap
/// (the scatter's overlapping unaligned stores also stall store forwarding).
__attribute__((target("avx512f"))) void col2im_s1_avx512(const float* __restrict dcol,
                                                         float* __restrict dxs, const Geometry& g) {
    const Conv2dParams& p = *g.p;
    const auto bits = [](int64_t lo, int64_t hi) {  // lanes [lo, hi) of 16
        lo = std::max<int64_t>(lo, 0);
        hi = std::min<int64_t>(hi, 16);
        return lo >= hi ? __mmask16(0) : __mmask16(((1u << (hi - lo)) - 1u) << lo);
    };
    const int64_t taps = p.kh * p.kw;
    thread_local std::vector<const float*> t_rows;  // (Ci, Kh, Kw): dcol row of the tap or null
    t_rows.resize(static_cast<std::size_t>(p.ci * taps));
    for (int64_t r = 0; r < p.ci * taps; ++r)
        t_rows[r] = g.slot[r] < 0 ? nullptr : dcol + g.slot[r] * g.P;
    thread_local std::vector<__mmask16> t_mask;  // (chunk, Kw): lanes whose ow exists
    const int64_t chunks = (p.w + 15) / 16;
    t_mask.resize(static_cast<std::size_t>(chunks * p.kw));
    for (int64_t x0 = 0, q = 0; x0 < p.w; x0 += 16)
        for (int64_t kj = 0; kj < p.kw; ++kj, ++q) {
            const int64_t off = x0 + p.pad - kj;  // lane u reads ow = off + u
            t_mask[q] = bits(-off, std::min(p.wo, p.w + p.pad - kj) - off);
        }
    for (int64_t c = 0; c < p.ci; ++c)
        for (int64_t y = 0; y < p.h; ++y) {
            // Taps whose output row oh = y + pad - ki exists, ki ascending.
            const int64_t ki_lo = std::max<int64_t>(0, y + p.pad - (p.ho - 1));
            const int64_t ki_hi = std::min<int64_t>(p.kh, y + p.pad + 1);
            for (int64_t x0 = 0, ch = 0; x0 < p.w; x0 += 16, ++ch) {
                __m512 acc = _mm512_setzero_ps();  // ORDER: +0, then the taps in r order
                for (int64_t ki = ki_lo; ki < ki_hi; ++ki) {
                    const float* const* rows = t_rows.data() + (c * p.kh + ki) * p.kw;
                    const __mmask16* m = t_mask.data() + ch * p.kw;
                    const int64_t base = (y + p.pad - ki) * p.wo + x0 + p.pad;
                    for (int64_t kj = 0; kj < p.kw; ++kj)  // dead taps reach no input element
                        if (rows[kj])
                            acc = _mm512_add_ps(acc,
                                                _mm512_maskz_loadu_ps(m[kj], rows[kj] + base - kj));
                }
                _mm512_mask_storeu_ps(dxs + (c * p.h + y) * p.w + x0, bits(0, p.w - x0), acc);
            }
        }
}
#endif

/// dxs (Ci, H, W) = col2im(dcol (RL, P)). ORDER: dx starts at +0; live rows r ascending, so each
/// input element receives its taps (ki, kj) in ascending order (one position per tap at most).
/// Accumulates into a zeroed padded buffer dxp (Ci, Hp, Wp) with whole (Ho, Wo) runs (stride 1) or
/// strided runs; the border of dxp collects terms that belong to no input and is dropped.
/// Stride 1 on the AVX-512 path: col2im_s1_avx512 (same bits).
void col2im(const float* __restrict dcol, float* __restrict dxs, const Geometry& g) {
    const Conv2dParams& p = *g.p;
#if defined(__x86_64__)
    if (p.stride == 1 && cpu_isa() == CpuIsa::kAvx512) return col2im_s1_avx512(dcol, dxs, g);
#endif
    thread_local std::vector<float> t_dxp;
    const int64_t xpsz = p.ci * g.hp * g.wp;
    float* __restrict dxp = p.pad == 0 ? dxs : scratch(t_dxp, xpsz);
    std::fill(dxp, dxp + xpsz, 0.0f);
    for (int64_t i = 0; i < g.RL; ++i) {  // dead rows would land in the border only
        const int64_t r = g.live[i];
        const float* src = dcol + i * g.P;
        for (int64_t oh = 0; oh < p.ho; ++oh, src += p.wo) {
            float* __restrict d = dxp + g.rbase[r] + oh * p.stride * g.wp;
            if (p.stride == 1) {
                for (int64_t u = 0; u < p.wo; ++u) d[u] = d[u] + src[u];
            } else {
                for (int64_t u = 0; u < p.wo; ++u) d[u * p.stride] = d[u * p.stride] + src[u];
            }
        }
    }
    if (p.pad == 0) return;
    for (int64_t c = 0; c < p.ci; ++c)
        for (int64_t ih = 0; ih < p.h; ++ih)
            copy_run(dxs + (c * p.h + ih) * p.w, dxp + (c * g.hp + ih + p.pad) * g.wp + p.pad,
                     p.w);
}

// ---- conv.dgrad, tree mode ----
// No cross-sample reduction here: each sample's dx is owned by one iteration, and the sums over
// output channels and taps are sequential (kernels/conv2d.h).

void conv2d_dgrad_tree(const float* dy, const float* w, float* dx, const Conv2dParams& p) {
    if (conv2d_dgrad_is_forward(p)) {
        dgrad_tree_as_forward(dy, w, dx, p);
        return;
    }
    const Geometry g(p);
    // Pointwise: +0 + t == t, so dcol is written straight into dx.
    dgrad_per_sample(dy, w, dx, p, g, true,
                     [&g](const float* dcol, float* dxs) { col2im(dcol, dxs, g); });
}

// ---- conv.wgrad, tree mode ----
// Leaves are groups of G = conv2d_tree_group(P) consecutive samples (conv2d.h): a group's leaf is
// one GEMM sum continued over its samples in order, so the tree combines N / G leaves instead of
// N (on small feature maps the per-sample tree passes over the whole weight cost as much as the
// GEMMs themselves).
void conv2d_wgrad_tree(const float* x, const float* dy, float* dw, const Conv2dParams& p) {
    const Geometry g(p);
    const int64_t L = p.co * g.RL, G = conv2d_tree_group(g.P);
    const int64_t groups = (p.n + G - 1) / G;
    if (groups == 1 && g.all_live()) {  // one leaf: the tree is that leaf
        wgrad_group_leaf(x, dy, 0, p.n, g, dw, true);
        return;
    }
    thread_local std::vector<float> t_tree, t_leaves;
    float* tree = scratch(t_tree, common::tree_slots(groups) * L);
    float* leaves = scratch(t_leaves, std::min(kWave, groups) * L);  // (Co, RL) each
    for (int64_t g0 = 0; g0 < groups; g0 += kWave) {
        const int64_t wn = std::min(kWave, groups - g0);
        for_each_sample(wn, [&](int64_t j, bool par) {
            // ORDER: leaf_g = +0, then the products of samples s0, s0+1, ... in order.
            const int64_t s0 = (g0 + j) * G;
            wgrad_group_leaf(x, dy, s0, std::min(p.n, s0 + G), g, leaves + j * L, par);
        });
        // ORDER: group leaves enter the tree in group order; slices only split the elements.
        for_each_slice(L, [&](int64_t lo, int64_t hi) {
            for (int64_t j = 0; j < wn; ++j) {
                const int64_t count = g0 + j;
                float* slot = tree + common::tree_leaf_slot(count) * L;
                std::memcpy(slot + lo, leaves + j * L + lo, (hi - lo) * sizeof(float));
                common::tree_push(tree, L, lo, hi, count);
            }
        });
    }
    for_each_slice(L, [&](int64_t lo, int64_t hi) {
        common::tree_finish(tree, L, lo, hi, groups);
    });
    write_wgrad(tree, dw, g, [](float v) { return v; });  // the root is slot 0 (reduce_tree.h)
}

/// Forward on small maps: chunks of samples, each one GEMM y_chunk (Co, sc*P) = W col_chunk.
void conv2d_forward_chunked(const float* x, const GemmPackedA& wa, const float* b, float* y,
                            const Geometry& g, int64_t sc) {
    const Conv2dParams& p = *g.p;
    for_each_sample((p.n + sc - 1) / sc, [&](int64_t c, bool par) {
        const int64_t s0 = c * sc, n = std::min(sc, p.n - s0), cols = n * g.P;
        thread_local std::vector<float> t_col, t_out;
        float* out = scratch(t_out, p.co * cols);
        // ORDER: y = the fma chain from +0 over r ascending of w[o,r] * xpad[r,q]
        // (gemm_f32_k_fma) ...
        if (!forward_chunk_gemm(x, s0, n, wa, g, out, par)) {
            float* col = scratch(t_col, g.RL * cols);
            im2col_chunk(x, s0, n, g, col);
            gemm(wa, col, out, GemmParams{.m = p.co, .n = cols, .k = g.RL, .parallel = par});
        }
        for (int64_t j = 0; j < n; ++j) {
            float* ys = y + (s0 + j) * p.co * g.P;
            for (int64_t o = 0; o < p.co; ++o) {
                const float* src = out + o * cols + j * g.P;
                if (b) {  // ORDER: ... then + b[o], once
                    for (int64_t q = 0; q < g.P; ++q) ys[o * g.P + q] = src[q] + b[o];
                } else {
                    copy_run(ys + o * g.P, src, g.P);
                }
            }
        }
    });
}

}  // namespace

void conv2d_internal::forward_packed(const float* x, const GemmPackedA& wa, const float* b,
                                     float* y, const Geometry& g) {
    const Conv2dParams& p = *g.p;
    // Stride 1 on maps where the flat layout's Wp - Wo extra columns per row are >= 1/8 of the
    // work (16 x 16 with pad 1): packed run panels (one chunk per sample) instead, when at least
    // 64 output channels share each packed panel (with 16 or 32 the packing cost more than it
    // saved: MediumCNN conv2).
    const bool packed_runs = p.stride == 1 && (g.wp - p.wo) * 8 >= p.wo && p.co >= 64;
    if (const int64_t sc = samples_per_chunk(g); sc > 1 || packed_runs) {
        conv2d_forward_chunked(x, wa, b, y, g, sc);
        return;
    }
    const int64_t xsz = p.ci * p.h * p.w;
    const bool flat = p.stride == 1;
    // Flat positions: ho rows of Wp, the last one cut at Wo (so reads stay inside xp).
    const int64_t n_flat = (p.ho - 1) * g.wp + p.wo;
    const GemmParams gp{.m = p.co, .n = flat ? n_flat : g.P, .k = g.RL};
    for_each_sample(p.n, [&](int64_t s, bool par) {
        const Source src{pad_sample(x + s * xsz, g), &g};
        thread_local std::vector<const float*> t_rows;  // flat B rows: xp + rbase[r]
        if (flat) {
            t_rows.resize(static_cast<std::size_t>(g.RL));
            for (int64_t i = 0; i < g.RL; ++i) t_rows[i] = src.xp + g.rbase[g.live[i]];
        }
        float* ys = y + s * p.co * g.P;
        const bool direct = !flat || g.wp == p.wo;  // flat with Wp == Wo is y's own layout
        thread_local std::vector<float> t_out;
        float* out = direct ? ys : scratch(t_out, p.co * n_flat);
        GemmParams q = gp;
        q.parallel = par;
        // ORDER: y = the fma chain from +0 over r ascending of w[o,r] * xpad[r,q]
        // (gemm_f32_k_fma) ...
        if (flat) {
            gemm(wa, GemmBRows{t_rows.data()}, out, q);
        } else {
            gemm(wa, GemmBSource{pack_gather, &src}, out, q);
        }
        for (int64_t o = 0; o < p.co; ++o) {
            const float bo = b ? b[o] : 0.0f;
            for (int64_t oh = 0; oh < p.ho; ++oh) {
                float* yr = ys + (o * p.ho + oh) * p.wo;
                const float* orow = out + o * gp.n + oh * (direct ? p.wo : g.wp);
                if (b) {  // ORDER: ... then + b[o], once
                    for (int64_t ow = 0; ow < p.wo; ++ow) yr[ow] = orow[ow] + bo;
                } else if (!direct) {
                    std::memcpy(yr, orow, p.wo * sizeof(float));
                }
            }
        }
    });
}

void conv2d_forward(const float* x, const float* w, const float* b, float* y,
                    const Conv2dParams& p) {
    const Geometry g(p);
    forward_packed(x, pack_shared_a(live_weights(w, g), GemmParams{.m = p.co, .k = g.RL}), b, y,
                   g);
}

void conv2d_backward_data(const float* dy, const float* w, float* dx, const Conv2dParams& p) {
    switch (p.accum.mode) {
        case common::AccumMode::kTree: conv2d_dgrad_tree(dy, w, dx, p); return;
        case common::AccumMode::kKahan: conv2d_dgrad_kahan(dy, w, dx, p); return;
        case common::AccumMode::kExact: conv2d_dgrad_exact(dy, w, dx, p); return;
        case common::AccumMode::kPermuted: conv2d_dgrad_permuted(dy, w, dx, p); return;
        case common::AccumMode::kAtomic: conv2d_dgrad_atomic(dy, w, dx, p); return;
    }
}

void conv2d_backward_weight(const float* x, const float* dy, float* dw, const Conv2dParams& p) {
    if (p.n == 0) {
        if (p.exact_out == nullptr) std::fill(dw, dw + p.co * p.ci * p.kh * p.kw, 0.0f);
        return;
    }
    switch (p.accum.mode) {
        case common::AccumMode::kTree: conv2d_wgrad_tree(x, dy, dw, p); return;
        case common::AccumMode::kKahan: conv2d_wgrad_kahan(x, dy, dw, p); return;
        case common::AccumMode::kExact: conv2d_wgrad_exact(x, dy, dw, p); return;
        case common::AccumMode::kPermuted: conv2d_wgrad_permuted(x, dy, dw, p); return;
        case common::AccumMode::kAtomic: conv2d_wgrad_atomic(x, dy, dw, p); return;
    }
}

}  // namespace dt::kernels::cpu

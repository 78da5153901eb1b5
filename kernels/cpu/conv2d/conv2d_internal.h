// SPDX-License-Identifier: MIT
// Private to kernels/cpu/conv2d/, the CPU conv2d of kernels/conv2d.h (recipes there): the
// padded-sample geometry, the sample loops, im2col/col2im helpers, the per-mode entry points.
//   conv2d.cpp                       entry points: forward, tree mode of both sites, dispatch
//   conv2d_sample_chunks.cpp         small maps: several samples side by side in one GEMM
//   conv2d_dgrad_tree_as_forward.cpp conv.dgrad tree as a forward conv (stride 1, square K)
//   conv2d_dgrad_modes.cpp           conv.dgrad kahan / exact / permuted / atomic
//   conv2d_wgrad_modes.cpp           conv.wgrad kahan / exact / permuted / atomic
//   conv2d_wgrad_exact_tiled.cpp     conv.wgrad exact on small maps, in cache-sized tiles
//   conv2d_wgrad_exact_direct.cpp    conv.wgrad exact in tiles of the direct leaf's chains
//   conv2d_wgrad_direct_leaf.cpp     conv.wgrad leaf without a GEMM: few rows, small leaves
//   conv2d_direct_chain.h            the direct leaf's chains (lanes over output channels)
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/conv2d.h"
#include "kernels/cpu/parallel_for.h"
#include "kernels/gemm.h"

namespace dt::kernels::cpu::conv2d_internal {

constexpr int64_t kWave = 16;     // samples whose wgrad leaves are held at once
constexpr int64_t kSlice = 2048;  // elements per cross-sample combine work item

inline float* scratch(std::vector<float>& v, int64_t n) {
    if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<std::size_t>(n));
    return v.data();
}

/// Runs fn(lo, hi) over slices of [0, L) of at most kSlice elements. Across threads when L is
/// not small, as many equal slices (multiples of 16 elements) as a multiple of the thread count:
/// SmallCNN's 4608-element layer used to run its combine on one thread (3 slices of 2048 were
/// "too few") while the other waited. Slices cut elements only, so they change no bit.
template <class Fn>
void for_each_slice(int64_t L, Fn&& fn) {
    if (L <= 0) return;
    const int64_t threads = omp_in_parallel() ? 1 : omp_get_max_threads();
    int64_t slices = (L + kSlice - 1) / kSlice;
    if (threads > 1 && L >= 64 * threads) slices = (slices + threads - 1) / threads * threads;
    const int64_t len = ((L + slices - 1) / slices + 15) / 16 * 16;
    parallel_for(threads > 1 && slices > 1, slices, [&](int64_t sl) {
        const int64_t lo = sl * len, hi = std::min(L, lo + len);
        if (lo < hi) fn(lo, hi);
    });
}

/// Runs fn(s, parallel_gemm) for s in [0, n): samples across threads, or in order with a
/// parallel GEMM when there are fewer samples than threads.
template <class Fn>
void for_each_sample(int64_t n, Fn&& fn) {
    if (n >= omp_get_max_threads() && !omp_in_parallel()) {
#pragma omp parallel for schedule(static)
        for (int64_t s = 0; s < n; ++s) fn(s, false);
    } else {
        for (int64_t s = 0; s < n; ++s) fn(s, true);
    }
}

/// First output index i with i*stride - pad + k >= 0, and one past the last with
/// i*stride - pad + k < n_in (capped at n_out): the outputs whose tap k reads the image.
inline int64_t first_valid(int64_t pad, int64_t k, int64_t stride) {
    const int64_t a = pad - k;
    return a <= 0 ? 0 : (a + stride - 1) / stride;
}
inline int64_t end_valid(int64_t n_in, int64_t pad, int64_t k, int64_t stride, int64_t n_out) {
    const int64_t a = n_in - 1 + pad - k;
    return a < 0 ? 0 : std::min(n_out, a / stride + 1);
}

/// Kernel offset k reads the image (not the padding) at some output position along one axis.
inline bool tap_reads_image(int64_t k, int64_t n_in, int64_t n_out, int64_t pad, int64_t stride) {
    return first_valid(pad, k, stride) < end_valid(n_in, pad, k, stride, n_out);
}

/// The padded sample xp (Ci, Hp, Wp) of a convolution: xpad[r, q] = xp[rbase[r] +
/// oh*stride*Wp + ow*stride], rbase[r] = (c*Hp + ki)*Wp + kj, r = (c*Kh + ki)*Kw + kj,
/// q = oh*Wo + ow.
struct Geometry {
    const Conv2dParams* p;
    int64_t hp, wp, R, P;
    std::vector<int64_t> rbase;  // (R): offset of tap r's first pixel in xp
    // Live rows: r whose tap (ki, kj) reads the image at some output position, ascending (RL of
    // them). A dead row reads only padding (small maps with wide kernels: 48 of 49 taps of a 7x7
    // kernel on a 1x1 map), so the kernels leave it out of every GEMM (kernels/conv2d.h).
    std::vector<int64_t> live;
    std::vector<int64_t> slot;  // (R): index of row r in live, or -1 for a dead row
    int64_t RL = 0;
    explicit Geometry(const Conv2dParams& q)
        : p(&q),
          hp(q.h + 2 * q.pad),
          wp(q.w + 2 * q.pad),
          R(q.ci * q.kh * q.kw),
          P(q.ho * q.wo),
          rbase(static_cast<std::size_t>(R)),
          slot(static_cast<std::size_t>(R), -1) {
        for (int64_t c = 0, r = 0; c < q.ci; ++c)
            for (int64_t ki = 0; ki < q.kh; ++ki)
                for (int64_t kj = 0; kj < q.kw; ++kj, ++r) {
                    rbase[r] = (c * hp + ki) * wp + kj;
                    if (tap_reads_image(ki, q.h, q.ho, q.pad, q.stride) &&
                        tap_reads_image(kj, q.w, q.wo, q.pad, q.stride)) {
                        slot[r] = static_cast<int64_t>(live.size());
                        live.push_back(r);
                    }
                }
        RL = static_cast<int64_t>(live.size());
    }
    bool all_live() const { return RL == R; }
    /// 1x1, stride 1, no padding: every input element receives exactly one tap.
    bool pointwise() const { return p->kh == 1 && p->kw == 1 && p->stride == 1 && p->pad == 0; }
};

/// dst[0 .. n) = src[0 .. n) for short runs (GCC turns copy loops, even 3-element tails and
/// intrinsic loops, into memmove calls, which cost more than the copy here).
inline void copy_run(float* __restrict dst, const float* __restrict src, int64_t n) {
    int64_t i = 0;
#if defined(__x86_64__)
    for (; i + 4 <= n; i += 4) {
        _mm_storeu_ps(dst + i, _mm_loadu_ps(src + i));
        __asm__ volatile("");  // keeps GCC from turning this loop into a memmove call
    }
#else
    for (; i + 4 <= n; i += 4)
        for (int64_t t = 0; t < 4; ++t) dst[i + t] = src[i + t];
#endif
    if (i < n) dst[i] = src[i];
    if (i + 1 < n) dst[i + 1] = src[i + 1];
    if (i + 2 < n) dst[i + 2] = src[i + 2];
}

/// The padded sample xp (Ci, Hp, Wp) of xs (Ci, H, W): xs itself when pad == 0.
const float* pad_sample(const float* xs, const Geometry& g);
/// Writes the padded sample of xs into xp (Ci*Hp*Wp floats).
void pad_into(const float* xs, const Geometry& g, float* xp);

/// dst[t] = xpad[r, q0 + t] for t < count (positions q = oh*Wo + ow in order).
void fill_tap(const float* xp, const Geometry& g, int64_t r, int64_t q0, int64_t count, float* dst);

/// w (Co, R) itself when every row is live, else its live columns (Co, RL) in the calling
/// thread's buffer.
const float* live_weights(const float* w, const Geometry& g);

/// dw (Co, R) from per-element state st over the live rows (Co, RL): dw[o, live[j]] =
/// value(st[o * RL + j]); dead rows get +0 (kernels/conv2d.h).
template <class T, class Value>
void write_wgrad(const T* st, float* dw, const Geometry& g, Value&& value) {
    const int64_t co = g.p->co;
    if (!g.all_live()) std::fill(dw, dw + co * g.R, 0.0f);
    for (int64_t o = 0; o < co; ++o)
        for (int64_t j = 0; j < g.RL; ++j) dw[o * g.R + g.live[j]] = value(st[o * g.RL + j]);
}

/// Packs A once for all samples, into the calling thread's buffer.
GemmPackedA pack_shared_a(const float* a, const GemmParams& gp);

/// Forward (conv2d.cpp) with the live weight columns (Co, RL) already packed in wa.
void forward_packed(const float* x, const GemmPackedA& wa, const float* b, float* y,
                    const Geometry& g);
/// conv.dgrad tree on conv2d_dgrad_is_forward shapes (conv2d_dgrad_tree_as_forward.cpp).
void dgrad_tree_as_forward(const float* dy, const float* w, float* dx, const Conv2dParams& p);

// ---- sample chunks (conv2d_sample_chunks.cpp): several samples side by side in one GEMM ----

/// Feature maps with fewer positions than this are computed in sample chunks.
constexpr int64_t kChunkPositions = 128;

/// Samples per chunk: 1 when P >= kChunkPositions, else enough for a few hundred GEMM columns,
/// at most N / threads (rounded up) so that chunks run side by side, and a multiple of the
/// thread count of chunks where a chunk at most half as wide gives one. No choice changes a bit.
int64_t samples_per_chunk(const Geometry& g);

/// dst (Co, sc*P): dst[o, j*P + q] = dy[s0 + j, o, q].
void gather_dy(const float* dy, int64_t s0, int64_t sc, const Geometry& g, float* dst);

/// out (Co, sc*P) = W col of samples [s0, s0 + sc) for stride 1 (wa: the live columns of W
/// packed as A), the GEMM packing its B panels straight from the padded samples (no im2col
/// buffer); false (nothing done) for other strides.
bool forward_chunk_gemm(const float* x, int64_t s0, int64_t sc, const GemmPackedA& wa,
                        const Geometry& g, float* out, bool parallel_gemm);

/// Offsets into a padded sample: roff[i] = rbase[live[i]], live row i's first pixel (int32: a
/// gather index; a sample has far fewer floats), and qoff[q], position q's window. Built per
/// call in the calling thread's buffers (valid until its next call).
struct WindowOffsets {
    const int32_t* roff;  // (RL)
    const int64_t* qoff;  // (P)
};
WindowOffsets window_offsets(const Geometry& g);

/// dst (RL, sc*P): dst[i, j*P + q] = xpad[s0 + j, live[i], q] (live rows only).
void im2col_chunk(const float* x, int64_t s0, int64_t sc, const Geometry& g, float* dst);
/// Its transpose for the whole batch, in blocks of `span` live rows: block b (N*P, span) at
/// dst + b * N*P*span holds dst_b[(j*P + q) * span + i] = xpad[j, live[b*span + i], q], zeros
/// past RL (gathered from the padded samples, split over threads when large). span = RL: the
/// plain (N*P, RL) transpose.
void im2col_transposed_blocks(const float* x, const Geometry& g, int64_t span, float* dst);

/// The wgrad leaf (Co, RL) of samples [s0, s1) over the live rows: leaf[o,i] = the fma chain
/// from +0 over (sample, q) ascending of dy[s,o,q] * xpad[s,live[i],q] (one sample: the per-sample
/// leaf, the same bits in every mode; several: one sum continued over them in order). Computed in
/// chunks of samples, each chunk's GEMM continuing the previous one's partial sums.
void wgrad_group_leaf(const float* x, const float* dy, int64_t s0, int64_t s1, const Geometry& g,
                      float* leaf, bool parallel_gemm);

/// wgrad_group_leaf's leaf without a GEMM on the AVX-512 path (conv2d_wgrad_direct_leaf.cpp):
/// layers with few live rows (RL <= 32, Co = 16 or 32) or a leaf of at most kDirectLeafBytes
/// (Co = 16, 32 or a multiple of 64). The same chains, so the same bits. False when the shape
/// or path is not one it takes (then nothing was written).
bool wgrad_leaf_direct(const float* x, const float* dy, int64_t s0, int64_t s1, const Geometry& g,
                       float* leaf);

/// dcol (RL, sc*P) = W^T dY of samples [s0, s0 + sc) on the live rows, columns j*P + q; wt = the
/// live rows of W^T packed as A.
void dgrad_chunk(const float* dy, int64_t s0, int64_t sc, const GemmPackedA& wt, const Geometry& g,
                 float* dcol, bool parallel_gemm);

/// Calls fn(run_dst_offset, src, count) for every col2im run of dcol (RL, P) (live rows) in the
/// row order `rows` (R entries, dead rows skipped; null: ascending): the run of row r at output
/// row oh adds src[u] (u < count) to padded element run_dst_offset + u * stride. Inputs never see
/// a run in any other order than `rows` gives. (A dead row's runs would all land in the border.)
template <class Fn>
void for_each_col2im_run(const float* dcol, const Geometry& g, const int64_t* rows, Fn&& fn) {
    const Conv2dParams& p = *g.p;
    for (int64_t j = 0; j < g.R; ++j) {
        const int64_t r = rows ? rows[j] : j;
        if (g.slot[r] < 0) continue;
        const float* src = dcol + g.slot[r] * g.P;
        for (int64_t oh = 0; oh < p.ho; ++oh, src += p.wo)
            fn(g.rbase[r] + oh * p.stride * g.wp, src, p.wo);
    }
}

/// The dgrad loop of every per-sample mode: per sample, dcol (RL, P) = W^T dY_s on the live
/// rows (ORDER: the fma chain over o ascending of w[o,r] * dy[s,o,q], gemm_f32_k_fma), then
/// col2im_mode(dcol, dxs). With skip_pointwise, a 1x1 / stride 1 / no padding convolution writes
/// dcol straight into dx (one tap per element, whose value the mode's accumulation from +0
/// leaves unchanged).
template <class Col2im>
void dgrad_per_sample(const float* dy, const float* w, float* dx, const Conv2dParams& p,
                      const Geometry& g, bool skip_pointwise, Col2im&& col2im_mode) {
    const int64_t RL = g.RL, P = g.P, xsz = p.ci * p.h * p.w;
    const bool direct = skip_pointwise && g.pointwise();
    const GemmParams gp{.m = RL, .n = P, .k = p.co, .lda = RL, .trans_a = true};
    const GemmPackedA wt = pack_shared_a(live_weights(w, g), gp);
    if (const int64_t sc = samples_per_chunk(g); sc > 1) {
        for_each_sample((p.n + sc - 1) / sc, [&](int64_t c, bool par) {
            const int64_t s0 = c * sc, n = std::min(sc, p.n - s0);
            thread_local std::vector<float> t_chunk, t_dcol;
            float* chunk = scratch(t_chunk, RL * n * P);
            dgrad_chunk(dy, s0, n, wt, g, chunk, par);
            for (int64_t j = 0; j < n; ++j) {  // sample j's columns, as (RL, P)
                float* dxs = dx + (s0 + j) * xsz;
                float* dcol = direct ? dxs : scratch(t_dcol, RL * P);
                for (int64_t i = 0; i < RL; ++i)
                    copy_run(dcol + i * P, chunk + i * n * P + j * P, P);
                if (!direct) col2im_mode(dcol, dxs);
            }
        });
        return;
    }
    for_each_sample(p.n, [&](int64_t s, bool par) {
        thread_local std::vector<float> t_dcol;
        float* dxs = dx + s * xsz;
        float* dcol = direct ? dxs : scratch(t_dcol, RL * P);
        GemmParams q = gp;
        q.parallel = par;
        gemm(wt, dy + s * p.co * P, dcol, q);
        if (!direct) col2im_mode(dcol, dxs);
    });
}

// ---- mode entry points (p.n >= 1 for wgrad) ----
void conv2d_wgrad_kahan(const float* x, const float* dy, float* dw, const Conv2dParams& p);
void conv2d_wgrad_exact(const float* x, const float* dy, float* dw, const Conv2dParams& p);
/// The exact mode on small maps (conv2d_wgrad_exact_tiled.cpp): same bits as the general
/// path (with p.exact_out: the same sums added there); false when the shape is not one it takes
/// (then nothing was written).
bool conv2d_wgrad_exact_tiled(const float* x, const float* dy, float* dw, const Geometry& g);
/// The exact mode with the direct leaf's chains (conv2d_wgrad_exact_direct.cpp, AVX-512,
/// Co = 16, 32 or a multiple of 64): the same bits; false when the shape or path is not one it
/// takes (then nothing was written).
bool conv2d_wgrad_exact_direct(const float* x, const float* dy, float* dw, const Geometry& g);
void conv2d_wgrad_permuted(const float* x, const float* dy, float* dw, const Conv2dParams& p);
void conv2d_wgrad_atomic(const float* x, const float* dy, float* dw, const Conv2dParams& p);
void conv2d_dgrad_kahan(const float* dy, const float* w, float* dx, const Conv2dParams& p);
void conv2d_dgrad_exact(const float* dy, const float* w, float* dx, const Conv2dParams& p);
void conv2d_dgrad_permuted(const float* dy, const float* w, float* dx, const Conv2dParams& p);
void conv2d_dgrad_atomic(const float* dy, const float* w, float* dx, const Conv2dParams& p);

}  // namespace dt::kernels::cpu::conv2d_internal

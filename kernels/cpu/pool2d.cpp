// SPDX-License-Identifier: MIT
// Pooling on the CPU; recipe, modes and ORDER in kernels/pool2d.h. Every loop below owns whole
// (n, c) planes (schedule(static) over plane index), so nothing depends on the thread count;
// the one exception is the backward's atomic mode, which splits windows across threads on
// purpose.
#include "kernels/pool2d.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/gemm.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace dt::kernels::cpu {

namespace {

using common::AccumMode;

constexpr int64_t kParallelMin = 32768;  // elements below which one thread is faster

void maxpool_plane_general(const float* x, float* y, int32_t* am, const Pool2dParams& p) {
    for (int64_t oh = 0; oh < p.Ho; ++oh) {
        for (int64_t ow = 0; ow < p.Wo; ++ow) {
            const PoolWindow w = pool_window(oh, ow, p);
            // Start from the first in-range cell (it never beats itself), then select without
            // branches: random data makes the comparisons unpredictable.
            int64_t at = (w.ih0 + w.kh0) * p.W + (w.iw0 + w.kw0);
            float best = x[at];
            for (int kh = w.kh0; kh < w.kh1; ++kh) {
                for (int kw = w.kw0; kw < w.kw1; ++kw) {  // row-major window order
                    const int64_t off = (w.ih0 + kh) * p.W + (w.iw0 + kw);
                    const float v = x[off];
                    const bool t = pool_max_better(v, best);
                    best = t ? v : best;
                    at = t ? off : at;
                }
            }
            y[oh * p.Wo + ow] = best;
            am[oh * p.Wo + ow] = static_cast<int32_t>(at);
        }
    }
}

// 2x2 stride 2 without padding: the same first-maximum selection over (a, b, c, d) in row-major
// order, written branch-free so the compiler vectorises across ow. Pure selects: bitwise equal
// to maxpool_plane_general on every ISA.
void maxpool_row_2x2s2(const float* r0, const float* r1, float* yr, int32_t* ar, int64_t ow0,
                       int64_t Wo, int32_t base, int32_t w32) {
    for (int64_t ow = ow0; ow < Wo; ++ow) {
        const float a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
        float best = a;
        int32_t k = 0;
        bool t = pool_max_better(b, best);
        best = t ? b : best;
        k = t ? 1 : k;
        t = pool_max_better(c, best);
        best = t ? c : best;
        k = t ? w32 : k;
        t = pool_max_better(d, best);
        best = t ? d : best;
        k = t ? w32 + 1 : k;
        yr[ow] = best;
        ar[ow] = base + 2 * static_cast<int32_t>(ow) + k;
    }
}

#if defined(__x86_64__)
__attribute__((target("avx512f"))) inline __mmask16 better(__m512 v, __m512 best) {
    return _mm512_cmp_ps_mask(v, best, _CMP_NLE_UQ) & _mm512_cmp_ps_mask(best, best, _CMP_ORD_Q);
}

// The same selects, 16 windows at a time (the last group of a row masked, so rows as short as
// SmallCNN's 14, 7 and 3 windows vectorise too); the even and odd columns of each row pair are
// split with one two-source permute each. pool_max_better(v, best) = !(v <= best) && best == best
// is _CMP_NLE_UQ(v, best) & _CMP_ORD_Q(best, best). Masked lanes load +0 and are never stored.
__attribute__((target("avx512f"))) void maxpool_row_2x2s2_avx512(const float* r0, const float* r1,
                                                                 float* yr, int32_t* ar, int64_t Wo,
                                                                 int32_t base, int32_t w32) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
    for (int64_t ow = 0; ow < Wo; ow += 16) {
        const int64_t n = std::min<int64_t>(16, Wo - ow);  // windows in this group
        const int64_t cols = 2 * n;                        // input columns they read
        const __mmask16 lo = cols >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << cols) - 1);
        const __mmask16 hi = cols <= 16 ? 0 : static_cast<__mmask16>((1u << (cols - 16)) - 1);
        const __mmask16 out = n == 16 ? 0xFFFF : static_cast<__mmask16>((1u << n) - 1);
        const __m512 r0a = _mm512_maskz_loadu_ps(lo, r0 + 2 * ow);
        const __m512 r0b = _mm512_maskz_loadu_ps(hi, r0 + 2 * ow + 16);
        const __m512 r1a = _mm512_maskz_loadu_ps(lo, r1 + 2 * ow);
        const __m512 r1b = _mm512_maskz_loadu_ps(hi, r1 + 2 * ow + 16);
        const __m512 a = _mm512_permutex2var_ps(r0a, even, r0b);
        const __m512 b = _mm512_permutex2var_ps(r0a, odd, r0b);
        const __m512 c = _mm512_permutex2var_ps(r1a, even, r1b);
        const __m512 d = _mm512_permutex2var_ps(r1a, odd, r1b);
        __m512 best = a;
        __m512i k = _mm512_setzero_si512();
        __mmask16 t = better(b, best);
        best = _mm512_mask_blend_ps(t, best, b);
        k = _mm512_mask_blend_epi32(t, k, _mm512_set1_epi32(1));
        t = better(c, best);
        best = _mm512_mask_blend_ps(t, best, c);
        k = _mm512_mask_blend_epi32(t, k, _mm512_set1_epi32(w32));
        t = better(d, best);
        best = _mm512_mask_blend_ps(t, best, d);
        k = _mm512_mask_blend_epi32(t, k, _mm512_set1_epi32(w32 + 1));
        _mm512_mask_storeu_ps(yr + ow, out, best);
        const __m512i idx = _mm512_add_epi32(
            _mm512_add_epi32(_mm512_set1_epi32(base + 2 * static_cast<int32_t>(ow)), even), k);
        _mm512_mask_storeu_epi32(ar + ow, out, idx);
    }
}
#endif

void maxpool_plane_2x2s2(const float* x, float* y, int32_t* am, const Pool2dParams& p) {
    const int64_t W = p.W, Wo = p.Wo;
    const int32_t w32 = static_cast<int32_t>(W);
#if defined(__x86_64__)
    const bool avx512 = cpu_isa() == CpuIsa::kAvx512;  // the process-wide path (DT_ISA, --isa)
#endif
    for (int64_t oh = 0; oh < p.Ho; ++oh) {
        const float* r0 = x + 2 * oh * W;
        const float* r1 = r0 + W;
        const int32_t base = static_cast<int32_t>(2 * oh * W);
#if defined(__x86_64__)
        if (avx512) {
            maxpool_row_2x2s2_avx512(r0, r1, y + oh * Wo, am + oh * Wo, Wo, base, w32);
            continue;
        }
#endif
        maxpool_row_2x2s2(r0, r1, y + oh * Wo, am + oh * Wo, 0, Wo, base, w32);
    }
}

// ---- backward (site pool.backward) ----
// A contribution source calls f(cell, value) for every contribution of window (oh, ow) of plane
// pl, cell = offset inside the plane; at() visits windows by (oh, ow), by_index() by o.
struct MaxContrib {  // window o contributes dy[o] to its argmax cell
    const float* dy;
    const int32_t* am;
    int64_t out;  // Ho * Wo
    template <typename F>
    void by_index(int64_t pl, int64_t o, const Pool2dParams&, F&& f) const {
        const int64_t w = pl * out + o;
        f(static_cast<int64_t>(am[w]), dy[w]);
    }
    template <typename F>
    void at(int64_t pl, int64_t oh, int64_t ow, const Pool2dParams& p, F&& f) const {
        by_index(pl, oh * p.Wo + ow, p, f);
    }
};

struct AvgContrib {  // window o contributes g = dy[o] / (k*k) to each in-range cell, row-major
    const float* dy;
    float divisor;
    template <typename F>
    void at(int64_t pl, int64_t oh, int64_t ow, const Pool2dParams& p, F&& f) const {
        const PoolWindow w = pool_window(oh, ow, p);
        const float g = dy[(pl * p.Ho + oh) * p.Wo + ow] / divisor;  // ORDER: once per window
        for (int kh = w.kh0; kh < w.kh1; ++kh) {
            const int64_t row = (w.ih0 + kh) * p.W + w.iw0;
            for (int kw = w.kw0; kw < w.kw1; ++kw) f(row + kw, g);
        }
    }
    template <typename F>
    void by_index(int64_t pl, int64_t o, const Pool2dParams& p, F&& f) const {
        at(pl, o / p.Wo, o % p.Wo, p, f);
    }
};

// kAtomic: dx zeroed, then contiguous static ranges of window rows (pl, oh) per thread, every
// contribution atomic-added. No ORDER on purpose (kernels/pool2d.h).
template <typename Contrib>
void backward_atomic(float* dx, const Pool2dParams& p, const Contrib& src) {
    const int64_t planes = p.N * p.C, in = p.H * p.W, rows = planes * p.Ho;
#pragma omp parallel if (planes * in >= kParallelMin)
    {
#pragma omp for schedule(static)
        for (int64_t i = 0; i < planes * in; ++i) dx[i] = 0.0f;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
            const int64_t pl = r / p.Ho, oh = r % p.Ho;
            float* d = dx + pl * in;
            for (int64_t ow = 0; ow < p.Wo; ++ow)
                src.at(pl, oh, ow, p,
                       [d](int64_t cell, float v) { common::atomic_add_float(d + cell, v); });
        }
    }
}

// d[i] = kahan_value({d[i], c[i]}): d + c when d is finite, else d. Written on the bits (the
// exponent test and the select) so that the loop vectorises; same values as kahan_value.
void kahan_values(float* __restrict d, const float* __restrict c, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float s = d[i], v = s + c[i];
        const uint32_t us = common::float_to_bits(s), uv = common::float_to_bits(v);
        const uint32_t keep_v = (us & 0x7f800000u) == 0x7f800000u ? 0u : ~0u;
        d[i] = common::bits_to_float((uv & keep_v) | (us & ~keep_v));
    }
}

// kExact per plane. Every cell first accumulates its contributions in a double from +0 with a
// TwoSum check of each addition (bp = t - s, ap = t - bp, err = (s - ap) + (v - bp) is the exact
// rounding error of t = s + v). When no addition of a cell erred, the double holds the exact sum
// of its float contributions and one conversion to float rounds it once (RNE): exactly
// exact_value, overflow to +-inf included. Cells where an addition erred (exponents spread too
// wide, or an inf or NaN contribution: err is then NaN) are redone with an ExactAcc in a second
// pass over the plane's windows. A double sum starting at +0 is never -0, like exact_value.
struct ExactPlane {
    std::vector<double> acc;
    std::vector<int32_t> slot;  // second pass: index into pool, or -1
    std::vector<int64_t> redo;  // cells whose double sum erred
    std::vector<common::ExactAcc> pool;

    void begin(int64_t in) {
        acc.assign(static_cast<std::size_t>(in), 0.0);
        redo.clear();
    }
    void add(int64_t cell, float x) {
        const double s = acc[cell], v = x, t = s + v;
        const double bp = t - s, ap = t - bp, err = (s - ap) + (v - bp);
        acc[cell] = t;
        if (!(err == 0.0)) redo.push_back(cell);  // also NaN; duplicates are harmless
    }
    template <typename Visit>
    void finish(float* d, int64_t in, Visit visit_all) {
        for (int64_t i = 0; i < in; ++i) d[i] = static_cast<float>(acc[i]);
        if (redo.empty()) return;
        slot.assign(static_cast<std::size_t>(in), -1);
        pool.clear();
        for (int64_t cell : redo) {
            if (slot[cell] >= 0) continue;
            slot[cell] = static_cast<int32_t>(pool.size());
            pool.emplace_back();
            common::exact_init(pool.back());
        }
        visit_all([this](int64_t cell, float v) {
            if (slot[cell] >= 0) common::exact_add(pool[static_cast<std::size_t>(slot[cell])], v);
        });
        for (int64_t cell : redo)
            d[cell] = common::exact_value(pool[static_cast<std::size_t>(slot[cell])]);
    }
};

// Every mode but atomic: one plane per iteration. kahan keeps the running sums in dx and the
// compensations in a per-thread plane; exact uses ExactPlane. Without overlap every mode
// takes the tree loop (same bits, kernels/pool2d.h).
template <typename Contrib>
void backward_planes(float* dx, const Pool2dParams& p, const Contrib& src) {
    const int64_t planes = p.N * p.C, in = p.H * p.W, out = p.Ho * p.Wo;
    const AccumMode mode = p.stride < p.kernel ? p.accum.mode : AccumMode::kTree;
    if (mode == AccumMode::kAtomic) {
        backward_atomic(dx, p, src);
        return;
    }
    std::vector<uint32_t> order;
    if (mode == AccumMode::kPermuted) {  // one permutation of the window indices per call
        order.resize(static_cast<std::size_t>(out));
        common::permute_order(order.data(), out, p.accum.permute_key);
    }
#pragma omp parallel if (planes * in >= kParallelMin)
    {
        std::vector<float> comp;  // kahan
        ExactPlane exact;         // exact
        if (mode == AccumMode::kKahan) comp.resize(static_cast<std::size_t>(in));
#pragma omp for schedule(static)
        for (int64_t pl = 0; pl < planes; ++pl) {
            float* d = dx + pl * in;
            const auto plain = [d](int64_t cell, float v) { d[cell] = d[cell] + v; };
            switch (mode) {
                case AccumMode::kTree:
                case AccumMode::kAtomic:  // (handled above)
                    // ORDER: from +0, windows in row-major output order, each adding its
                    // contributions (avg: its in-range cells in row-major order).
                    for (int64_t i = 0; i < in; ++i) d[i] = 0.0f;
                    for (int64_t oh = 0; oh < p.Ho; ++oh)
                        for (int64_t ow = 0; ow < p.Wo; ++ow) src.at(pl, oh, ow, p, plain);
                    break;
                case AccumMode::kPermuted:
                    // ORDER: from +0, windows order[0], order[1], ... (same order every plane).
                    for (int64_t i = 0; i < in; ++i) d[i] = 0.0f;
                    for (int64_t k = 0; k < out; ++k) src.by_index(pl, order[k], p, plain);
                    break;
                case AccumMode::kKahan: {
                    // ORDER: the tree order above with kahan_add per cell (sum in d, comp in c),
                    // then kahan_value: sum + comp, or sum alone when sum is not finite.
                    float* c = comp.data();
                    for (int64_t i = 0; i < in; ++i) d[i] = 0.0f, c[i] = 0.0f;
                    for (int64_t oh = 0; oh < p.Ho; ++oh)
                        for (int64_t ow = 0; ow < p.Wo; ++ow)
                            src.at(pl, oh, ow, p, [d, c](int64_t cell, float v) {
                                const float t = d[cell] + v;
                                c[cell] = c[cell] + common::two_sum_err(d[cell], v, t);
                                d[cell] = t;
                            });
                    kahan_values(d, c, in);
                    break;
                }
                case AccumMode::kExact: {
                    // ORDER: none (exact_value of each cell's contributions).
                    const auto visit_all = [&](auto f) {
                        for (int64_t oh = 0; oh < p.Ho; ++oh)
                            for (int64_t ow = 0; ow < p.Wo; ++ow) src.at(pl, oh, ow, p, f);
                    };
                    exact.begin(in);
                    visit_all([&exact](int64_t cell, float v) { exact.add(cell, v); });
                    exact.finish(d, in, visit_all);
                    break;
                }
            }
        }
    }
}

}  // namespace

void maxpool2d_forward(const float* x, float* y, int32_t* argmax, const Pool2dParams& p) {
    const int64_t planes = p.N * p.C, in = p.H * p.W, out = p.Ho * p.Wo;
    const bool fast = p.kernel == 2 && p.stride == 2 && p.padding == 0;
#pragma omp parallel for schedule(static) if (planes * in >= kParallelMin)
    for (int64_t pl = 0; pl < planes; ++pl) {
        if (fast) {
            maxpool_plane_2x2s2(x + pl * in, y + pl * out, argmax + pl * out, p);
        } else {
            maxpool_plane_general(x + pl * in, y + pl * out, argmax + pl * out, p);
        }
    }
}

void maxpool2d_backward(const float* dy, const int32_t* argmax, float* dx, const Pool2dParams& p) {
    backward_planes(dx, p, MaxContrib{dy, argmax, p.Ho * p.Wo});
}

void avgpool2d_forward(const float* x, float* y, const Pool2dParams& p) {
    const int64_t planes = p.N * p.C, in = p.H * p.W, out = p.Ho * p.Wo;
    const float divisor = static_cast<float>(p.kernel * p.kernel);
#pragma omp parallel for schedule(static) if (planes * in >= kParallelMin)
    for (int64_t pl = 0; pl < planes; ++pl) {
        const float* xp = x + pl * in;
        for (int64_t oh = 0; oh < p.Ho; ++oh) {
            for (int64_t ow = 0; ow < p.Wo; ++ow) {
                const PoolWindow w = pool_window(oh, ow, p);
                float s = 0.0f;
                // ORDER: in-range cells in row-major window order from +0, then one division.
                for (int kh = w.kh0; kh < w.kh1; ++kh)
                    for (int kw = w.kw0; kw < w.kw1; ++kw)
                        s = s + xp[(w.ih0 + kh) * p.W + (w.iw0 + kw)];
                y[pl * out + oh * p.Wo + ow] = s / divisor;
            }
        }
    }
}

void avgpool2d_backward(const float* dy, float* dx, const Pool2dParams& p) {
    backward_planes(dx, p, AvgContrib{dy, static_cast<float>(p.kernel * p.kernel)});
}

void global_avgpool_forward(const float* x, float* y, int64_t planes, int64_t hw) {
    const float divisor = static_cast<float>(hw);
#pragma omp parallel for schedule(static) if (planes * hw >= kParallelMin)
    for (int64_t pl = 0; pl < planes; ++pl) {
        const float* xp = x + pl * hw;
        float s = 0.0f;
        for (int64_t i = 0; i < hw; ++i) s = s + xp[i];  // ORDER: index order from +0
        y[pl] = s / divisor;                             // ORDER: then one division
    }
}

void global_avgpool_backward(const float* dy, float* dx, int64_t planes, int64_t hw) {
    const float divisor = static_cast<float>(hw);
#pragma omp parallel for schedule(static) if (planes * hw >= kParallelMin)
    for (int64_t pl = 0; pl < planes; ++pl) {
        const float g = dy[pl] / divisor;  // ORDER: dx = dy / (H*W) in every cell
        float* d = dx + pl * hw;
        for (int64_t i = 0; i < hw; ++i) d[i] = g;
    }
}

}  // namespace dt::kernels::cpu

// SPDX-License-Identifier: MIT
// Pooling on the CPU; recipe and ORDER in kernels/pool2d.h. Every loop below owns whole (n, c)
// planes (schedule(static) over plane index), so nothing depends on the thread count.
#include "kernels/pool2d.h"

#include <algorithm>

namespace dt::kernels::cpu {

namespace {

using common::AccumMode;

constexpr int64_t kParallelMin = 32768;  // elements below which one thread is faster

// The max-pool order relation: v replaces the current best iff it is larger, or it is the first
// NaN (NaN propagates, as in PyTorch). Strictness makes the first maximum win. Written as
// !(v <= best) && best == best (same truth table as v > best || (v is NaN && best is not)),
// which compiles to two compares and one and: 20% faster in the 2x2 fast path.
inline bool max_better(float v, float best) { return !(v <= best) && best == best; }

// Window rows [kh0, kh1) and columns [kw0, kw1) that fall inside the input.
struct Window {
    int64_t ih0, iw0;
    int kh0, kh1, kw0, kw1;
};

inline Window window_at(int64_t oh, int64_t ow, const Pool2dParams& p) {
    Window w;
    w.ih0 = oh * p.stride - p.padding;
    w.iw0 = ow * p.stride - p.padding;
    w.kh0 = static_cast<int>(std::max<int64_t>(0, -w.ih0));
    w.kh1 = static_cast<int>(std::min<int64_t>(p.kernel, p.H - w.ih0));
    w.kw0 = static_cast<int>(std::max<int64_t>(0, -w.iw0));
    w.kw1 = static_cast<int>(std::min<int64_t>(p.kernel, p.W - w.iw0));
    return w;
}

void maxpool_plane_general(const float* x, float* y, int32_t* am, const Pool2dParams& p) {
    for (int64_t oh = 0; oh < p.Ho; ++oh) {
        for (int64_t ow = 0; ow < p.Wo; ++ow) {
            const Window w = window_at(oh, ow, p);
            // Start from the first in-range cell (it never beats itself), then select without
            // branches: random data makes the comparisons unpredictable.
            int64_t at = (w.ih0 + w.kh0) * p.W + (w.iw0 + w.kw0);
            float best = x[at];
            for (int kh = w.kh0; kh < w.kh1; ++kh) {
                for (int kw = w.kw0; kw < w.kw1; ++kw) {  // row-major window order
                    const int64_t off = (w.ih0 + kh) * p.W + (w.iw0 + kw);
                    const float v = x[off];
                    const bool t = max_better(v, best);
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
void maxpool_plane_2x2s2(const float* x, float* y, int32_t* am, const Pool2dParams& p) {
    const int64_t W = p.W, Wo = p.Wo;
    const int32_t w32 = static_cast<int32_t>(W);
    for (int64_t oh = 0; oh < p.Ho; ++oh) {
        const float* r0 = x + 2 * oh * W;
        const float* r1 = r0 + W;
        float* yr = y + oh * Wo;
        int32_t* ar = am + oh * Wo;
        const int32_t base = static_cast<int32_t>(2 * oh * W);
        for (int64_t ow = 0; ow < Wo; ++ow) {
            const float a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], d = r1[2 * ow + 1];
            float best = a;
            int32_t k = 0;
            bool t = max_better(b, best);
            best = t ? b : best;
            k = t ? 1 : k;
            t = max_better(c, best);
            best = t ? c : best;
            k = t ? w32 : k;
            t = max_better(d, best);
            best = t ? d : best;
            k = t ? w32 + 1 : k;
            yr[ow] = best;
            ar[ow] = base + 2 * static_cast<int32_t>(ow) + k;
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
    const int64_t planes = p.N * p.C, in = p.H * p.W, out = p.Ho * p.Wo;
#pragma omp parallel for schedule(static) if (planes * in >= kParallelMin)
    for (int64_t pl = 0; pl < planes; ++pl) {
        float* d = dx + pl * in;
        const float* g = dy + pl * out;
        const int32_t* a = argmax + pl * out;
        for (int64_t i = 0; i < in; ++i) d[i] = 0.0f;
        switch (p.mode) {
            case AccumMode::kTree:
                // ORDER: windows in row-major output order, each adding into its argmax cell.
                for (int64_t o = 0; o < out; ++o) d[a[o]] = d[a[o]] + g[o];
                break;
        }
    }
}

void avgpool2d_forward(const float* x, float* y, const Pool2dParams& p) {
    const int64_t planes = p.N * p.C, in = p.H * p.W, out = p.Ho * p.Wo;
    const float divisor = static_cast<float>(p.kernel * p.kernel);
#pragma omp parallel for schedule(static) if (planes * in >= kParallelMin)
    for (int64_t pl = 0; pl < planes; ++pl) {
        const float* xp = x + pl * in;
        for (int64_t oh = 0; oh < p.Ho; ++oh) {
            for (int64_t ow = 0; ow < p.Wo; ++ow) {
                const Window w = window_at(oh, ow, p);
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
    const int64_t planes = p.N * p.C, in = p.H * p.W, out = p.Ho * p.Wo;
    const float divisor = static_cast<float>(p.kernel * p.kernel);
#pragma omp parallel for schedule(static) if (planes * in >= kParallelMin)
    for (int64_t pl = 0; pl < planes; ++pl) {
        float* d = dx + pl * in;
        for (int64_t i = 0; i < in; ++i) d[i] = 0.0f;
        switch (p.mode) {
            case AccumMode::kTree:
                // ORDER: windows in row-major output order; g = dy / (k*k) added to each
                // in-range cell of the window in row-major order.
                for (int64_t oh = 0; oh < p.Ho; ++oh) {
                    for (int64_t ow = 0; ow < p.Wo; ++ow) {
                        const Window w = window_at(oh, ow, p);
                        const float g = dy[pl * out + oh * p.Wo + ow] / divisor;
                        for (int kh = w.kh0; kh < w.kh1; ++kh) {
                            float* row = d + (w.ih0 + kh) * p.W + w.iw0;
                            for (int kw = w.kw0; kw < w.kw1; ++kw) row[kw] = row[kw] + g;
                        }
                    }
                }
                break;
        }
    }
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

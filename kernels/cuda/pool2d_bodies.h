// SPDX-License-Identifier: MIT
// Per-thread bodies of the CUDA pooling kernels (kernels/cuda/pool2d.cu), host-device, tested on
// the host over whole grids against the CPU (kernels/pool2d.h's recipe).
// Forward: one thread per output (max: the first maximum in row-major window order, NaN wins;
// avg: in-range cells in row-major order from +0, then / (k*k)); global average: one thread per
// plane. Backward, site pool.backward: one thread per input cell GATHERS the contributions of the
// windows covering it, in the order the recipe adds them into that cell: row-major window order
// (tree, kahan), the window permutation's order (permuted: windows sorted by their rank in
// `order`), any order (exact: integer sums); so each cell gets the CPU's bits without any
// thread writing another's cell. atomic: one thread per window scatters with atomic adds into
// the zeroed dx, the mode's real race. Without overlap (stride >= kernel) every mode is the tree
// loop, as on the CPU.
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_exact_short.h"
#include "kernels/common/accum_kahan.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/common/atomic_add.h"
#include "kernels/common/divisor.h"
#include "kernels/common/grid.h"
#include "kernels/pool2d.h"

namespace dt::kernels::cuda {

using common::GridPos;

/// The most windows that can cover one input cell for which the permuted gather sorts ranks
/// (ceil(kernel / stride)^2); the op layer's shapes stay far below (3x3 stride 1: 9).
inline constexpr int kPoolMaxCover = 64;

/// The divisions of pooling's index arithmetic, made by the launcher: by a plane's size and
/// its row length (of the output for a thread per window, pool_out_divisors; of the input for a
/// thread per input cell, pool_in_divisors) and by the stride.
struct PoolDivisors {
    common::Divisor plane, row, stride;
};
inline PoolDivisors pool_out_divisors(const Pool2dParams& p) {
    return {common::make_divisor(p.Ho * p.Wo), common::make_divisor(p.Wo),
            common::make_divisor(p.stride)};
}
inline PoolDivisors pool_in_divisors(const Pool2dParams& p) {
    return {common::make_divisor(p.H * p.W), common::make_divisor(p.W),
            common::make_divisor(p.stride)};
}

/// Element i of planes of (rows, row length): its plane, its index in the plane, row, column.
struct PlanePos {
    int64_t plane, at, y, x;
};
DT_HD PlanePos plane_pos(int64_t i, const PoolDivisors& d) {
    const common::QuotRem plane = common::divide(i, d.plane), row = common::divide(plane.r, d.row);
    return {plane.q, plane.r, row.q, row.r};
}

/// `d`: pool_out_divisors(p) (as for avgpool2d_forward_body and pool_backward_atomic_body).
DT_HD void maxpool2d_forward_body(const GridPos& t, const float* x, float* y, int32_t* argmax,
                                  const Pool2dParams& p, const PoolDivisors& d) {
    const int64_t out = p.Ho * p.Wo, in = p.H * p.W;
    common::grid_stride(t, p.N * p.C * out, [&](int64_t i) {
        const PlanePos o = plane_pos(i, d);
        const PoolWindow w = pool_window(o.y, o.x, p);
        const float* xp = x + o.plane * in;
        int64_t at = (w.ih0 + w.kh0) * p.W + (w.iw0 + w.kw0);
        float best = xp[at];
        for (int kh = w.kh0; kh < w.kh1; ++kh) {
            for (int kw = w.kw0; kw < w.kw1; ++kw) {  // row-major window order
                const int64_t off = (w.ih0 + kh) * p.W + (w.iw0 + kw);
                if (pool_max_better(xp[off], best)) best = xp[off], at = off;
            }
        }
        y[i] = best;
        argmax[i] = static_cast<int32_t>(at);
    });
}

DT_HD void avgpool2d_forward_body(const GridPos& t, const float* x, float* y, const Pool2dParams& p,
                                  const PoolDivisors& d) {
    const int64_t out = p.Ho * p.Wo, in = p.H * p.W;
    const float divisor = static_cast<float>(p.kernel * p.kernel);
    common::grid_stride(t, p.N * p.C * out, [&](int64_t i) {
        const PlanePos o = plane_pos(i, d);
        const PoolWindow w = pool_window(o.y, o.x, p);
        const float* xp = x + o.plane * in;
        float s = 0.0f;
        // ORDER: in-range cells in row-major window order from +0, then one division.
        for (int kh = w.kh0; kh < w.kh1; ++kh)
            for (int kw = w.kw0; kw < w.kw1; ++kw) s = s + xp[(w.ih0 + kh) * p.W + (w.iw0 + kw)];
        y[i] = s / divisor;
    });
}

DT_HD void global_avgpool_forward_body(const GridPos& t, const float* x, float* y, int64_t planes,
                                       int64_t hw) {
    const float divisor = static_cast<float>(hw);
    common::grid_stride(t, planes, [&](int64_t pl) {
        float s = 0.0f;
        for (int64_t i = 0; i < hw; ++i) s = s + x[pl * hw + i];  // ORDER: index order from +0
        y[pl] = s / divisor;                                      // ORDER: then one division
    });
}

/// `hw`: make_divisor(H * W), made by the launcher.
DT_HD void global_avgpool_backward_body(const GridPos& t, const float* dy, float* dx,
                                        int64_t planes, const common::Divisor& hw) {
    const float divisor = static_cast<float>(hw.d);
    common::grid_stride(t, planes * hw.d,
                        [&](int64_t i) { dx[i] = dy[common::quotient(i, hw)] / divisor; });
}

/// The contribution of window o of plane pl to input cell `cell` of that plane, if any.
/// max: dy[o] when cell is o's argmax; avg: dy[o] / (k*k) when cell is inside o's window.
struct PoolContrib {
    const float* dy;
    const int32_t* argmax;  // nullptr: average pooling
    DT_HD bool at(int64_t pl, int64_t o, int64_t cell, const Pool2dParams& p, float* v) const {
        const int64_t w = pl * p.Ho * p.Wo + o;
        if (argmax != nullptr) {
            *v = dy[w];
            return argmax[w] == cell;
        }
        *v = dy[w] / static_cast<float>(p.kernel * p.kernel);  // ORDER: once per window
        return true;  // every covering window's in-range cells receive g
    }
};

/// Windows covering input row ih: oh in [lo, hi).
DT_HD void pool_cover(int64_t i, int64_t padding, const common::Divisor& stride, int64_t kernel,
                      int64_t out, int64_t* lo, int64_t* hi) {
    const int64_t a = i + padding - kernel + 1;  // first window start that still covers i
    int64_t l = a <= 0 ? 0 : common::quotient(a + stride.d - 1, stride);
    int64_t h = common::quotient(i + padding, stride) + 1;
    *lo = l;
    *hi = h < out ? h : out;
}

/// dx cell i (every mode but atomic): the contributions of the windows covering it, gathered in
/// the recipe's order. `rank[o]` = position of window o in the permuted order (kPermuted). Each
/// mode keeps only its own accumulator (tree's thread touches no local memory).
/// `d`: pool_in_divisors(p).
DT_HD void pool_backward_gather_body(const GridPos& t, PoolContrib src, const uint32_t* rank,
                                     float* dx, const Pool2dParams& p, const PoolDivisors& d) {
    const int64_t in = p.H * p.W;
    const common::AccumMode mode = p.stride < p.kernel ? p.accum.mode : common::AccumMode::kTree;
    common::grid_stride(t, p.N * p.C * in, [&](int64_t i) {
        const PlanePos c = plane_pos(i, d);
        const int64_t pl = c.plane, cell = c.at;
        int64_t oh0, oh1, ow0, ow1;
        pool_cover(c.y, p.padding, d.stride, p.kernel, p.Ho, &oh0, &oh1);
        pool_cover(c.x, p.padding, d.stride, p.kernel, p.Wo, &ow0, &ow1);
        // f(o, v) for the covering windows o contributing v, in row-major window order.
        const auto each_contribution = [&](auto&& f) {
            for (int64_t oh = oh0; oh < oh1; ++oh) {
                for (int64_t ow = ow0; ow < ow1; ++ow) {
                    const int64_t o = oh * p.Wo + ow;
                    float v;
                    if (src.at(pl, o, cell, p, &v)) f(o, v);
                }
            }
        };
        switch (mode) {
            case common::AccumMode::kKahan: {  // ORDER: kahan_add in row-major window order
                common::KahanSum k = common::kahan_zero();
                each_contribution([&](int64_t, float v) { common::kahan_add(k, v); });
                dx[i] = common::kahan_value(k);
                return;
            }
            case common::AccumMode::kExact:  // ORDER: none, rounded once (accum_exact_short.h)
                dx[i] = common::exact_sum_of(
                    [&](auto&& add) { each_contribution([&](int64_t, float v) { add(v); }); });
                return;
            case common::AccumMode::kPermuted: {
                uint32_t ranks[kPoolMaxCover];
                float vals[kPoolMaxCover];
                int n = 0;
                for (int64_t oh = oh0; oh < oh1; ++oh) {
                    for (int64_t ow = ow0; ow < ow1; ++ow) {  // row-major window order
                        const int64_t o = oh * p.Wo + ow;
                        float v;
                        if (n == kPoolMaxCover || !src.at(pl, o, cell, p, &v)) continue;
                        int j = n++;  // insertion by rank: the permuted order
                        for (; j > 0 && ranks[j - 1] > rank[o]; --j) {
                            ranks[j] = ranks[j - 1];
                            vals[j] = vals[j - 1];
                        }
                        ranks[j] = rank[o];
                        vals[j] = v;
                    }
                }
                float sum = 0.0f;
                for (int j = 0; j < n; ++j) sum = sum + vals[j];  // ORDER: permuted window order
                dx[i] = sum;
                return;
            }
            default: {  // ORDER: tree: row-major window order, from +0
                float sum = 0.0f;
                each_contribution([&](int64_t, float v) { sum = sum + v; });
                dx[i] = sum;
                return;
            }
        }
    });
}

/// Global thread 0: rank[order[k]] = k for the permutation of the Ho * Wo windows.
DT_HD void pool_rank_body(const GridPos& t, uint32_t* order, uint32_t* rank,
                          const Pool2dParams& p) {
    if (t.global() != 0) return;
    const int64_t out = p.Ho * p.Wo;
    common::permute_order(order, out, p.accum.permute_key);
    for (int64_t k = 0; k < out; ++k) rank[order[k]] = static_cast<uint32_t>(k);
}

/// kAtomic: one thread per window of any plane, its contributions atomic-added into the zeroed
/// dx. No ORDER on purpose.
DT_HD void pool_backward_atomic_body(const GridPos& t, PoolContrib src, float* dx,
                                     const Pool2dParams& p, const PoolDivisors& div) {
    const int64_t in = p.H * p.W;
    common::grid_stride(t, p.N * p.C * p.Ho * p.Wo, [&](int64_t i) {
        const PlanePos o = plane_pos(i, div);
        float* d = dx + o.plane * in;
        if (src.argmax != nullptr) {
            common::atomic_add_float(d + src.argmax[i], src.dy[i]);
            return;
        }
        const PoolWindow w = pool_window(o.y, o.x, p);
        const float g = src.dy[i] / static_cast<float>(p.kernel * p.kernel);
        for (int kh = w.kh0; kh < w.kh1; ++kh)
            for (int kw = w.kw0; kw < w.kw1; ++kw)
                common::atomic_add_float(d + (w.ih0 + kh) * p.W + (w.iw0 + kw), g);
    });
}

}  // namespace dt::kernels::cuda

// SPDX-License-Identifier: MIT
// The CUDA conv2d kernels' bodies on the host against the CPU kernels, routed as the launcher
// routes them: the tiled forward block program (also dgrad's tree on 3x3-'same' shapes) with
// real barriers (tests/support/block_runner.h), the per-element backward bodies
// (kernels/cuda/conv2d_bodies.h) over every thread of a grid: forward with and without bias,
// dgrad (the tiled per-tap values and their sums over slices of samples, and the per-element
// variant; the exact and atomic modes on 3x3-'same' shapes, which the launcher runs as the
// transposed forward cut per tap or split per kernel row, conv2d_dgrad_tiled_test.cpp) and wgrad
// (the tiled leaves and their combination over slices of output channels, and the per-element
// variant) in tree, kahan, exact and permuted bitwise, atomic close. Shapes: 3x3 'same' (dgrad as
// the transposed forward), 3x3 stride 2 (dgrad's tap sums), 7x7 on a 2x2 map (dead taps), 1x1, a
// batch of 40 on an 8x8 map (three tree groups of conv.wgrad), and a 3x2 kernel with stride 2 on a
// 5x7 map (rows and columns told apart), a 5x4 kernel with stride 3. The live taps of one axis
// (dgrad's walk) against the tap-by-tap test.
#include "kernels/cuda/conv2d_bodies.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "kernels/cuda/conv2d_dgrad_tiled_bodies.h"
#include "kernels/cuda/conv2d_tiled_bodies.h"
#include "kernels/cuda/linear_bodies.h"
#include "tests/support/block_runner.h"
#include "tests/support/compare.h"
#include "tests/support/conv2d_shapes.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::for_each_thread;
using common::GridPos;

Conv2dParams conv(int64_t n, int64_t ci, int64_t hw, int64_t co, int64_t k, int64_t stride,
                  int64_t pad) {
    Conv2dParams p{n, ci, hw, hw, co, k, k, stride, pad};
    p.ho = (hw + 2 * pad - k) / stride + 1;
    p.wo = p.ho;
    return p;
}

/// The tiled forward's block program (tile shape S) over all its blocks, with real barriers.
template <class S = cuda::SmallTile, class Weight>
void forward_tiled(const float* x, const Weight& wt, const float* b, float* y,
                   const Conv2dParams& q) {
    test::run_blocks(static_cast<uint32_t>(cuda::conv_tiles<S>(q)), S::kThreads, S::kShared,
                     [&](const GridPos& t, float* shared, const auto& sync) {
                         cuda::conv_forward_tiled_block<S>(t, shared, sync, x, wt, b, y, q);
                     });
}

/// conv.wgrad's tiled group chains for the channels [o_lo, o_hi), with real barriers.
template <class S = cuda::SmallTile, class Out>
void wgrad_tiled(const float* x, const float* dy, const Conv2dParams& p, int64_t G, int64_t o_lo,
                 int64_t o_hi, const Out& out) {
    const int64_t blocks = (p.n + G - 1) / G * cuda::conv_wgrad_tiles<S>(p, o_lo, o_hi);
    test::run_blocks(static_cast<uint32_t>(blocks), S::kThreads, S::kShared,
                     [&](const GridPos& t, float* shared, const auto& sync) {
                         cuda::conv_wgrad_tiled_block<S>(t, shared, sync, x, dy, p, G, o_lo, o_hi,
                                                         out);
                     });
}

/// conv.dgrad's per-tap values as the launcher computes them (the same in every mode): per
/// slice of `slice` samples, the tiled block program with real barriers into a NaN-filled
/// buffer (so a value the sums read but no thread wrote shows).
struct TapSlices {
    int64_t slice;
    std::vector<std::vector<float>> values;  // per slice
};
template <class S = cuda::SmallTile>
TapSlices dgrad_tap_values(const float* dy, const float* w, const Conv2dParams& p, int64_t slice) {
    TapSlices out{slice, {}};
    for (int64_t s_lo = 0; s_lo < p.n; s_lo += slice) {
        const int64_t s_hi = std::min(p.n, s_lo + slice);
        out.values.emplace_back((s_hi - s_lo) * p.kh * p.kw * p.ci * p.ho * p.wo, NAN);
        test::run_blocks(static_cast<uint32_t>(cuda::conv_dgrad_tap_tiles<S>(p, s_lo, s_hi)),
                         S::kThreads, S::kShared,
                         [&](const GridPos& t, float* shared, const auto& sync) {
                             cuda::conv_dgrad_taps_tiled_block<S>(
                                 t, shared, sync, dy, w, out.values.back().data(), p, s_lo, s_hi);
                         });
    }
    return out;
}

/// conv.dgrad's second phase over the slices' tap values: each element's sum of them in p's
/// mode (atomic: row partials atomic-added into a zeroed dx).
std::vector<float> dgrad_sums(const TapSlices& taps, const uint32_t* order, const Conv2dParams& p) {
    const int64_t P = p.ho * p.wo, HW = p.h * p.w;
    const bool atomic = p.accum.mode == common::AccumMode::kAtomic;
    std::vector<float> dx(static_cast<std::size_t>(p.n * p.ci * HW), atomic ? 0.0f : NAN);
    for (std::size_t k = 0; k < taps.values.size(); ++k) {
        const int64_t s_lo = static_cast<int64_t>(k) * taps.slice;
        const int64_t s_hi = std::min(p.n, s_lo + taps.slice);
        const cuda::DgradTapBuffer buf{
            taps.values[k].data(), s_lo, (s_hi - s_lo) * P, p.ci, p.ho, p.wo};
        const int64_t e0 = s_lo * p.ci * HW, e1 = s_hi * p.ci * HW;
        const cuda::DgradDivisors d = cuda::conv_dgrad_divisors(p, e1 - e0);
        for_each_thread(2, 32, [&](const GridPos& t) {
            if (atomic)
                cuda::conv2d_dgrad_atomic_body(t, buf, dx.data(), p, d, e0, e1);
            else
                cuda::conv2d_dgrad_body(t, buf, dx.data(), order, p, d, e0, e1);
        });
    }
    return dx;
}

/// conv.wgrad's leaves as the launcher computes them: per slice of `slice` output channels, the
/// tiled chains over groups of `group` samples into a NaN-filled buffer (so a leaf the
/// combination reads but no thread wrote shows).
struct LeafSlices {
    int64_t group, slice;
    std::vector<std::vector<float>> values;  // per slice
};
template <class S = cuda::SmallTile>
LeafSlices wgrad_leaves(const float* x, const float* dy, const Conv2dParams& p, int64_t group,
                        int64_t slice) {
    LeafSlices out{group, slice, {}};
    const int64_t R = p.ci * p.kh * p.kw, count = (p.n + group - 1) / group;
    for (int64_t o_lo = 0; o_lo < p.co; o_lo += slice) {
        const int64_t o_hi = std::min(p.co, o_lo + slice), len = (o_hi - o_lo) * R;
        out.values.emplace_back(count * len, NAN);
        wgrad_tiled<S>(x, dy, p, group, o_lo, o_hi,
                       cuda::WgradLeafOut{out.values.back().data(), o_lo * R, len});
    }
    return out;
}

TEST(CudaConv2dBodies, AxisTapsAreTheLiveTapsInAscendingOrder) {
    // Against conv_out_of tap by tap: every (kernel, stride, pad, size) up to small limits.
    for (int64_t kernel = 1; kernel <= 7; ++kernel)
        for (int64_t stride = 1; stride <= 4; ++stride)
            for (int64_t pad = 0; pad <= kernel; ++pad)
                for (int64_t n_in = 1; n_in <= 9; ++n_in) {
                    const int64_t n_out = (n_in + 2 * pad - kernel) / stride + 1;
                    if (n_in + 2 * pad < kernel) continue;
                    for (int64_t i = 0; i < n_in; ++i) {
                        std::vector<std::pair<int64_t, int64_t>> want, got;
                        for (int64_t k = 0; k < kernel; ++k) {
                            const int64_t o = cuda::conv_out_of(i, k, pad, stride, n_out);
                            if (o >= 0) want.emplace_back(k, o);
                        }
                        const cuda::AxisTaps a = cuda::conv_axis_taps(
                            i, kernel, pad, common::make_divisor(stride), n_out);
                        for (int64_t j = 0; j < a.count; ++j)
                            got.emplace_back(a.k0 + j * stride, a.o0 - j);
                        EXPECT_EQ(got, want) << "k " << kernel << " stride " << stride << " pad "
                                             << pad << " in " << n_in << " i " << i;
                    }
                }
}

TEST(CudaConv2dBodies, ForwardAndEveryBackwardModeEqualTheCpu) {
    for (const Conv2dParams& shape :
         {conv(3, 2, 6, 4, 3, 1, 1), conv(3, 2, 7, 3, 3, 2, 1), conv(2, 3, 2, 2, 7, 1, 3),
          conv(3, 4, 5, 2, 1, 1, 0), conv(40, 2, 8, 3, 3, 1, 1),
          test::geom(3, 2, 5, 7, 3, 3, 2, 2, 1), test::geom(2, 2, 8, 9, 2, 5, 4, 3, 2)}) {
        SCOPED_TRACE(test::describe(shape));
        const int64_t X = shape.n * shape.ci * shape.h * shape.w,
                      Y = shape.n * shape.co * shape.ho * shape.wo,
                      Wn = shape.co * shape.ci * shape.kh * shape.kw;
        const std::vector<float> x = test::signed_uniform(X, 1), w = test::signed_uniform(Wn, 2),
                                 b = test::signed_uniform(shape.co, 3),
                                 dy = test::signed_uniform(Y, 4);
        for (bool bias : {true, false}) {
            std::vector<float> want(Y), got(Y, NAN);
            cpu::conv2d_forward(x.data(), w.data(), bias ? b.data() : nullptr, want.data(), shape);
            forward_tiled(x.data(), cuda::ConvWeight{w.data(), shape.ci, shape.kh, shape.kw},
                          bias ? b.data() : nullptr, got.data(), shape);
            EXPECT_TRUE(test::bitwise_equal(got.data(), want.data(), Y)) << "forward " << bias;
        }
        // Slices of 3 samples (the last one shorter where N = 40) and of all of them.
        std::vector<TapSlices> tap_values;
        for (const int64_t slice : {int64_t{3}, shape.n})
            tap_values.push_back(dgrad_tap_values(dy.data(), w.data(), shape, slice));
        // wgrad's leaves per sample (kahan, exact, permuted) and per tree group, in slices of 2
        // output channels (the last one shorter where Co = 3) and of all of them.
        std::vector<LeafSlices> leaf_values;
        Conv2dParams tree = shape;
        tree.accum = common::accum_spec(common::AccumMode::kTree);
        for (const int64_t group : {int64_t{1}, cuda::conv_wgrad_leaf_group(tree)})
            for (const int64_t slice : {int64_t{2}, shape.co})
                leaf_values.push_back(wgrad_leaves(x.data(), dy.data(), shape, group, slice));
        for (const common::AccumSpec& spec : test::all_mode_specs(71)) {
            SCOPED_TRACE(test::accum_mode_name(spec.mode));
            Conv2dParams p = shape;
            p.accum = spec;
            std::vector<float> want_dx(X), want_dw(Wn), dw(Wn, 0.0f);
            cpu::conv2d_backward_data(dy.data(), w.data(), want_dx.data(), p);
            cpu::conv2d_backward_weight(x.data(), dy.data(), want_dw.data(), p);
            std::vector<uint32_t> taps(p.kh * p.kw), samples(p.n);
            for_each_thread(1, 1, [&](const GridPos& t) {
                cuda::permute_order_body(t, taps.data(), p.kh * p.kw, spec.permute_key);
                cuda::permute_order_body(t, samples.data(), p.n, spec.permute_key);
            });
            // dgrad per element (tap values where needed) and as the launcher runs it (the tiled
            // tap values, then each element's sum); tree on 3x3-'same' shapes is the transposed
            // forward instead.
            const bool as_forward =
                spec.mode == common::AccumMode::kTree && conv2d_dgrad_is_forward(p);
            std::vector<std::vector<float>> dxs;
            if (as_forward) {
                dxs.emplace_back(X, NAN);
                forward_tiled(dy.data(), cuda::FlippedWeight{w.data(), p.ci, p.kh}, nullptr,
                              dxs.back().data(), cuda::conv_dgrad_as_forward(p));
            } else {
                dxs.emplace_back(X, spec.mode == common::AccumMode::kAtomic ? 0.0f : NAN);
                const cuda::DgradTapChain chain{dy.data(), w.data(), p};
                const cuda::DgradDivisors whole = cuda::conv_dgrad_divisors(p, X);
                for_each_thread(3, 32, [&](const GridPos& t) {
                    if (spec.mode == common::AccumMode::kAtomic)
                        cuda::conv2d_dgrad_atomic_body(t, chain, dxs.back().data(), p, whole, 0, X);
                    else
                        cuda::conv2d_dgrad_body(t, chain, dxs.back().data(), taps.data(), p, whole,
                                                0, X);
                });
                for (const TapSlices& values : tap_values)
                    dxs.push_back(dgrad_sums(values, taps.data(), p));
            }
            for (const std::vector<float>& got : dxs) {
                if (spec.mode != common::AccumMode::kAtomic) {
                    EXPECT_TRUE(test::bitwise_equal(got.data(), want_dx.data(), X)) << "dgrad";
                    continue;
                }
                for (int64_t i = 0; i < X; ++i) EXPECT_NEAR(got[i], want_dx[i], 1e-4f) << i;
            }
            if (spec.mode == common::AccumMode::kAtomic) {
                wgrad_tiled(x.data(), dy.data(), p, kConv2dAtomicGroup, 0, p.co,
                            cuda::WgradAtomicOut{dw.data()});
                for (int64_t i = 0; i < Wn; ++i) EXPECT_NEAR(dw[i], want_dw[i], 1e-3f) << i;
                continue;
            }
            std::fill(dw.begin(), dw.end(), NAN);
            std::vector<float> dw_each(Wn, NAN);
            for_each_thread(3, 32, [&](const GridPos& t) {
                cuda::conv2d_wgrad_body(t, x.data(), dy.data(), dw_each.data(), samples.data(), p);
            });
            EXPECT_TRUE(test::bitwise_equal(dw_each.data(), want_dw.data(), Wn))
                << "wgrad per element";
            // The launcher's two phases: the tiled leaves (computed once per leaf group and
            // slicing, above), then their combination in this mode.
            for (const LeafSlices& leaves : leaf_values) {
                if (leaves.group != cuda::conv_wgrad_leaf_group(p)) continue;
                std::fill(dw.begin(), dw.end(), NAN);
                const int64_t R = p.ci * p.kh * p.kw;
                for (std::size_t k = 0; k < leaves.values.size(); ++k) {
                    const int64_t o_lo = static_cast<int64_t>(k) * leaves.slice;
                    const int64_t len = (std::min(p.co, o_lo + leaves.slice) - o_lo) * R;
                    for_each_thread(2, 32, [&](const GridPos& t) {
                        cuda::conv2d_wgrad_combine_body(t, leaves.values[k].data(), samples.data(),
                                                        dw.data(), p, o_lo * R, len);
                    });
                }
                EXPECT_TRUE(test::bitwise_equal(dw.data(), want_dw.data(), Wn))
                    << "wgrad, slices of " << leaves.slice << " channels";
            }
        }
    }
}

TEST(CudaConv2dBodies, DeadTapsAreLeftOutOfTheChains) {
    // A 7x7 kernel with padding 3 on a 2x2 map: tap rows and columns 0, 1, 5 and 6 read only
    // padding, and the recipe leaves them out of every chain (kernels/conv2d.h), so infinite
    // weights there change nothing on the CPU; an fma with the padding's +0 would make NaN.
    // Chunks with dead taps take the block program's per-term path in every tile shape.
    const Conv2dParams p = conv(2, 3, 2, 2, 7, 1, 3);
    const int64_t X = p.n * p.ci * p.h * p.w, Y = p.n * p.co * p.ho * p.wo,
                  Wn = p.co * p.ci * p.kh * p.kw;
    const std::vector<float> x = test::signed_uniform(X, 15);
    std::vector<float> w = test::signed_uniform(Wn, 16);
    for (int64_t e = 0; e < Wn; ++e)
        if (e % 7 == 0 || e / 7 % 7 == 6) w[e] = INFINITY;  // tap column 0, tap row 6
    std::vector<float> want(Y), small(Y, NAN), large(Y, NAN), tiny(Y, NAN);
    cpu::conv2d_forward(x.data(), w.data(), nullptr, want.data(), p);
    for (int64_t i = 0; i < Y; ++i) ASSERT_TRUE(std::isfinite(want[i])) << i;
    const cuda::ConvWeight wt{w.data(), p.ci, p.kh, p.kw};
    forward_tiled(x.data(), wt, nullptr, small.data(), p);
    forward_tiled<cuda::LargeTile>(x.data(), wt, nullptr, large.data(), p);
    forward_tiled<cuda::TinyTile>(x.data(), wt, nullptr, tiny.data(), p);
    EXPECT_TRUE(test::bitwise_equal(small.data(), want.data(), Y));
    EXPECT_TRUE(test::bitwise_equal(large.data(), want.data(), Y));
    EXPECT_TRUE(test::bitwise_equal(tiny.data(), want.data(), Y));
}

TEST(CudaConv2dBodies, EveryTileShapeGivesTheSmallTilesBits) {
    // Every block program of the convolution with LargeTile (64 x 128, 8 x 8 per thread) and
    // TinyTile (16 x 16, 1 x 2) against SmallTile (checked against the CPU above): the same
    // chains, so the same bits, partial tiles included (shapes smaller and larger than a tile in
    // each dimension).
    for (const Conv2dParams& p :
         {conv(3, 2, 6, 4, 3, 1, 1), conv(2, 3, 2, 2, 7, 1, 3), conv(5, 9, 12, 70, 3, 1, 1)}) {
        SCOPED_TRACE(testing::Message() << "n" << p.n << " ci" << p.ci << " co" << p.co);
        const int64_t X = p.n * p.ci * p.h * p.w, Y = p.n * p.co * p.ho * p.wo,
                      Wn = p.co * p.ci * p.kh * p.kw;
        const std::vector<float> x = test::signed_uniform(X, 11), w = test::signed_uniform(Wn, 12),
                                 b = test::signed_uniform(p.co, 13),
                                 dy = test::signed_uniform(Y, 14);
        const cuda::ConvWeight wt{w.data(), p.ci, p.kh, p.kw};
        std::vector<float> small(Y, NAN);
        forward_tiled(x.data(), wt, b.data(), small.data(), p);
        const TapSlices ts = dgrad_tap_values(dy.data(), w.data(), p, p.n);
        const LeafSlices ls[2] = {wgrad_leaves(x.data(), dy.data(), p, 1, p.co),
                                  wgrad_leaves(x.data(), dy.data(), p, 2, p.co)};
        const auto same_as_small = [&](auto shape, const char* name) {
            using S = decltype(shape);
            SCOPED_TRACE(name);
            std::vector<float> y(Y, NAN);
            forward_tiled<S>(x.data(), wt, b.data(), y.data(), p);
            EXPECT_TRUE(test::bitwise_equal(y.data(), small.data(), Y)) << "forward";
            const TapSlices t = dgrad_tap_values<S>(dy.data(), w.data(), p, p.n);
            EXPECT_TRUE(test::bitwise_equal(t.values[0], ts.values[0])) << "dgrad taps";
            for (const int64_t group : {int64_t{1}, int64_t{2}}) {
                const LeafSlices l = wgrad_leaves<S>(x.data(), dy.data(), p, group, p.co);
                EXPECT_TRUE(test::bitwise_equal(l.values[0], ls[group - 1].values[0]))
                    << "wgrad " << group;
            }
        };
        same_as_small(cuda::LargeTile{}, "large");
        same_as_small(cuda::TinyTile{}, "tiny");
    }
}

TEST(CudaConv2dBodies, SampleLeavesOfSeveralSamplesABlockAreThePerSampleLeaves) {
    // conv_wgrad_sample_leaves_block (the launcher's per-sample leaves: B samples a block, the
    // chains cut at every sample's end) against the tiled chains of one sample a block (checked
    // against the CPU above), every tile shape, B = 1, 3 and 64, slices of 2 channels and all:
    // the same leaves in the same places (NaN where a dead tap has none). Shapes: 64, 16, 12 and
    // 4 positions a sample (the cuts on a chunk's end and inside it), dead taps, 40 samples.
    for (const Conv2dParams& p :
         {conv(40, 2, 8, 3, 3, 1, 1), conv(3, 2, 7, 3, 3, 2, 1),
          test::geom(3, 2, 5, 7, 3, 3, 2, 2, 1), conv(2, 3, 2, 2, 7, 1, 3)}) {
        SCOPED_TRACE(test::describe(p));
        const std::vector<float> x = test::signed_uniform(test::xsize(p), 17),
                                 dy = test::signed_uniform(test::ysize(p), 18);
        const int64_t R = p.ci * p.kh * p.kw;
        for (const int64_t slice : {int64_t{2}, p.co}) {
            const LeafSlices want = wgrad_leaves(x.data(), dy.data(), p, 1, slice);
            const auto expect_same = [&](auto shape, int64_t B) {
                using S = decltype(shape);
                for (std::size_t k = 0; k < want.values.size(); ++k) {
                    const int64_t o_lo = static_cast<int64_t>(k) * slice;
                    const int64_t o_hi = std::min(p.co, o_lo + slice), len = (o_hi - o_lo) * R;
                    std::vector<float> got(want.values[k].size(), NAN);
                    const int64_t blocks =
                        (p.n + B - 1) / B * cuda::conv_wgrad_tiles<S>(p, o_lo, o_hi);
                    test::run_blocks(static_cast<uint32_t>(blocks), S::kThreads, S::kShared,
                                     [&](const GridPos& t, float* shared, const auto& sync) {
                                         cuda::conv_wgrad_sample_leaves_block<S>(
                                             t, shared, sync, x.data(), dy.data(), p, B, o_lo, o_hi,
                                             cuda::WgradLeafOut{got.data(), o_lo * R, len});
                                     });
                    EXPECT_TRUE(test::bitwise_equal(got, want.values[k]))
                        << B << " samples a block, slice " << k << " of " << slice;
                }
            };
            for (const int64_t B : {int64_t{1}, int64_t{3}, int64_t{64}}) {
                expect_same(cuda::SmallTile{}, B);
                expect_same(cuda::TinyTile{}, B);
                expect_same(cuda::LargeTile{}, B);
            }
        }
    }
}

}  // namespace
}  // namespace dt::kernels

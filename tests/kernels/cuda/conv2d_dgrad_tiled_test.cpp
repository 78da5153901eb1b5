// SPDX-License-Identifier: MIT
// conv.dgrad's exact and atomic modes as the transposed forward on the host
// (kernels/cuda/conv2d_dgrad_tiled_bodies.h), run with real barriers over every block: the exact
// mode cut per tap and folded per element against the CPU's exact mode bitwise, for every tile
// shape, with per-tap values that cancel, that lie far more binades apart than a double holds
// (the outputs computed again) and that are infinite or NaN; the atomic mode split per kernel row
// against the CPU's atomic mode (close; the same infinities and NaN). Shapes: 3x3 'same', a 5x5
// kernel with padding 1 (dy smaller than dx), 1x1, a 3x3 kernel on a 2x2 map and a 7x7 one on a
// 3x3 map (taps whose output position never exists; the transposed forward's dead taps), a
// channel count that is no multiple of the chunk's 8 terms (cuts inside a chunk), one channel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/conv2d.h"
#include "kernels/cuda/conv2d_dgrad_tiled_bodies.h"
#include "tests/support/block_runner.h"
#include "tests/support/compare.h"
#include "tests/support/conv2d_shapes.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using common::GridPos;

std::vector<Conv2dParams> shapes() {
    using test::geom;  // (n, ci, h, w, co, kh, kw, stride, pad)
    return {geom(3, 5, 6, 7, 11, 3, 3, 1, 1), geom(2, 3, 7, 6, 17, 5, 5, 1, 1),
            geom(4, 6, 5, 5, 3, 1, 1, 1, 0),  geom(3, 2, 2, 2, 9, 3, 3, 1, 1),
            geom(2, 3, 3, 3, 8, 7, 7, 1, 3),  geom(5, 33, 4, 4, 1, 3, 3, 1, 1)};
}

/// The exact cut program of tile shape S over all its blocks into a NaN-filled dx.
template <class S>
std::vector<float> exact_cut(const std::vector<float>& dy, const std::vector<float>& w,
                             const Conv2dParams& p) {
    std::vector<float> dx(static_cast<std::size_t>(test::xsize(p)), NAN);
    const cuda::DgradDivisors d = cuda::conv_dgrad_divisors(p, test::xsize(p));
    test::run_blocks(static_cast<uint32_t>(cuda::conv_dgrad_cut_tiles<S>(p)), S::kThreads,
                     cuda::kDgradCutShared<S>,
                     [&](const GridPos& t, float* shared, const auto& sync) {
                         cuda::conv_dgrad_exact_cut_block<S>(t, shared, sync, dy.data(), w.data(),
                                                             dx.data(), p, d);
                     });
    return dx;
}

/// The atomic split program of tile shape S over all its blocks into a zeroed dx.
template <class S>
std::vector<float> atomic_split(const std::vector<float>& dy, const std::vector<float>& w,
                                const Conv2dParams& p) {
    std::vector<float> dx(static_cast<std::size_t>(test::xsize(p)), 0.0f);
    const cuda::DgradDivisors d = cuda::conv_dgrad_divisors(p, test::xsize(p));
    test::run_blocks(static_cast<uint32_t>(p.kh * cuda::conv_dgrad_cut_tiles<S>(p)), S::kThreads,
                     S::kShared, [&](const GridPos& t, float* shared, const auto& sync) {
                         cuda::conv_dgrad_atomic_split_block<S>(t, shared, sync, dy.data(),
                                                                w.data(), dx.data(), p, d);
                     });
    return dx;
}

/// The cases' inputs: signed uniform; "spread": the weights of the first tap scaled by 2^-60 and
/// of the last by 2^50, so that the values of those two taps lie far more binades apart than a
/// double's sum of them can hold where an element has both (not on the borders), and the weights
/// of output channel 1 the negated ones of channel 0 where dy's channel 1 is channel 0's (their
/// terms cancel but for the first product's rounding); "inf": one weight infinite (its tap's
/// values infinite or NaN, and NaN in the transposed forward's pieces of the elements whose
/// tap has no output position).
struct Inputs {
    std::string name;
    std::vector<float> dy, w;
};
std::vector<Inputs> inputs(const Conv2dParams& p) {
    const int64_t Y = test::ysize(p), Wn = test::wsize(p), P = p.ho * p.wo, KK = p.kh * p.kw,
                  per_o = p.ci * KK;
    std::vector<Inputs> out;
    out.push_back({"uniform", test::signed_uniform(Y, 11), test::signed_uniform(Wn, 12)});
    Inputs spread{"spread", out[0].dy, out[0].w};
    for (int64_t i = 0; i < Wn; ++i) {
        const int64_t tap = i % KK;
        if (KK > 1 && tap == 0) spread.w[i] = std::ldexp(spread.w[i], -60);
        if (KK > 1 && tap == KK - 1) spread.w[i] = std::ldexp(spread.w[i], 50);
    }
    if (p.co > 1) {
        for (int64_t r = 0; r < per_o; ++r) spread.w[per_o + r] = -spread.w[r];
        for (int64_t s = 0; s < p.n; ++s)
            for (int64_t i = 0; i < P; ++i)
                spread.dy[(s * p.co + 1) * P + i] = spread.dy[s * p.co * P + i];
    }
    out.push_back(spread);
    Inputs inf{"inf", out[0].dy, out[0].w};
    inf.w[per_o / 2] = INFINITY;  // output channel 0, input channel ci / 2's middle tap or so
    out.push_back(inf);
    return out;
}

TEST(CudaConv2dDgradTiled, ExactCutPerTapGivesTheExactBits) {
    for (const Conv2dParams& shape : shapes()) {
        Conv2dParams p = shape;
        p.accum = common::accum_spec(common::AccumMode::kExact);
        ASSERT_TRUE(conv2d_dgrad_is_forward(p));
        for (const Inputs& in : inputs(p)) {
            SCOPED_TRACE(test::describe(p) + ", " + in.name);
            std::vector<float> want(static_cast<std::size_t>(test::xsize(p)));
            cpu::conv2d_backward_data(in.dy.data(), in.w.data(), want.data(), p);
            EXPECT_TRUE(test::bitwise_equal(exact_cut<cuda::SmallTile>(in.dy, in.w, p), want));
            EXPECT_TRUE(test::bitwise_equal(exact_cut<cuda::TinyTile>(in.dy, in.w, p), want));
            EXPECT_TRUE(test::bitwise_equal(exact_cut<cuda::LargeTile>(in.dy, in.w, p), want));
        }
    }
}

TEST(CudaConv2dDgradTiled, ExactCutsInputsReachEveryPath) {
    // The cases above do what they say: "spread" has elements whose values a double cannot add
    // exactly (computed again), "inf" non-finite ones, and both have elements that are neither.
    const Conv2dParams p = shapes()[0];
    const std::vector<Inputs> in = inputs(p);
    std::vector<float> tree(static_cast<std::size_t>(test::xsize(p)));
    Conv2dParams q = p;
    q.accum = common::accum_spec(common::AccumMode::kExact);
    int64_t wide = 0;
    for (int64_t e = 0; e < test::xsize(p); ++e) {
        const int64_t s = e / (p.ci * p.h * p.w), c = e / (p.h * p.w) % p.ci, ih = e / p.w % p.h,
                      iw = e % p.w;
        int lo = 1000, hi = -1000;
        for (int64_t ki = 0; ki < p.kh; ++ki)
            for (int64_t kj = 0; kj < p.kw; ++kj) {
                float t;
                if (!test::dgrad_tap(in[1].dy, in[1].w, p, s, c, ih, iw, ki, kj, &t) || t == 0.0f)
                    continue;
                lo = std::min(lo, std::ilogb(t)), hi = std::max(hi, std::ilogb(t));
            }
        wide += hi - lo > 40;
    }
    EXPECT_GT(wide, 0) << "no element's tap values lie more than 40 binades apart";
    EXPECT_LT(wide, test::xsize(p)) << "every element's do";
    cpu::conv2d_backward_data(in[2].dy.data(), in[2].w.data(), tree.data(), q);
    int64_t non_finite = 0;
    for (float v : tree) non_finite += !std::isfinite(v);
    EXPECT_GT(non_finite, 0);
    EXPECT_LT(non_finite, test::xsize(p));
}

TEST(CudaConv2dDgradTiled, AtomicSplitPerKernelRowIsTheAtomicSum) {
    for (const Conv2dParams& shape : shapes()) {
        Conv2dParams p = shape;
        p.accum = common::accum_spec(common::AccumMode::kAtomic);
        for (const Inputs& in : inputs(p)) {
            if (in.name == "spread") continue;  // cancellations: no tolerance holds
            SCOPED_TRACE(test::describe(p) + ", " + in.name);
            std::vector<float> want(static_cast<std::size_t>(test::xsize(p)));
            cpu::conv2d_backward_data(in.dy.data(), in.w.data(), want.data(), p);
            const auto expect_close = [&](const std::vector<float>& got, const char* tile) {
                for (std::size_t i = 0; i < want.size(); ++i) {
                    if (!std::isfinite(want[i])) {  // the same infinity, or NaN
                        EXPECT_TRUE(std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i])
                            << tile << " " << i << ": " << got[i] << " vs " << want[i];
                        continue;
                    }
                    EXPECT_NEAR(got[i], want[i], 1e-4f) << tile << " " << i;
                }
            };
            expect_close(atomic_split<cuda::SmallTile>(in.dy, in.w, p), "small");
            expect_close(atomic_split<cuda::TinyTile>(in.dy, in.w, p), "tiny");
            expect_close(atomic_split<cuda::LargeTile>(in.dy, in.w, p), "large");
        }
    }
}

}  // namespace
}  // namespace dt::kernels

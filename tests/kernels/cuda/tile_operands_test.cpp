// SPDX-License-Identifier: MIT
// The tiled block programs' operands (kernels/cuda/tile_operands.h, conv2d_operands.h) against
// the plain definitions of the elements they read: every line, from every first term of a chunk
// (0 .. kTileK-1) moved on chunk by chunk to the end of K, as tile_gemm_block reads them. The
// inputs hold distinct values (their own index + 1), so a wrong address shows as a wrong value.
// Shapes: square and not (H != W, Kh != Kw), stride 1 and 2, padding, 1x1, maps of fewer
// positions than a chunk has terms, dead taps (a 7x7 kernel on a 2x2 map), and a kernel row of 70
// taps (liveness past the bitmask's 64).
#include "kernels/cuda/tile_operands.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <tuple>
#include <vector>

#include "kernels/cuda/conv2d_dgrad_tiled_bodies.h"
#include "kernels/cuda/conv2d_operands.h"
#include "kernels/cuda/conv2d_tiled_bodies.h"
#include "tests/support/conv2d_shapes.h"

namespace dt::kernels {
namespace {

using cuda::kTileK;

std::vector<float> numbered(int64_t n) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i + 1);
    return v;
}

/// op.at(line, k) == want(line, k) for every line and every k < K, reached as the block
/// program reaches it: pos(first term of a chunk), then advance; and for B operands (those with
/// next) also one term after the other from every first term.
template <class Op, class Want>
void expect_reads(const Op& op, int64_t lines, int64_t K, const Want& want) {
    for (int64_t line = 0; line < lines; ++line) {
        const typename Op::Line l = op.line(line);
        for (int first = 0; first < kTileK; ++first) {
            typename Op::Pos pos = op.pos(first);
            for (int64_t k = first; k < K; k += kTileK) {
                ASSERT_EQ(op.at(l, pos), want(line, k)) << "line " << line << " k " << k;
                op.advance(pos);
            }
            if constexpr (requires(typename Op::Pos p) { op.next(p); }) {
                typename Op::Pos each = op.pos(first);
                for (int64_t k = first; k < K; ++k) {
                    ASSERT_EQ(op.at(l, each), want(line, k)) << "line " << line << " k " << k;
                    op.next(each);
                }
            }
        }
    }
}

template <class Op, class Live>
void expect_live(const Op& op, int64_t K, const Live& live) {
    for (int first = 0; first < kTileK; ++first) {
        typename Op::Pos pos = op.pos(first);
        for (int64_t k = first; k < K; k += kTileK) {
            ASSERT_EQ(op.live(pos), live(k)) << "k " << k;
            op.advance(pos);
        }
    }
}

TEST(CudaTileOperands, DigitCountersMoveOnAsDivisionSays) {
    for (const auto& [mid, lo] : std::vector<std::pair<int64_t, int64_t>>{
             {1, 1}, {1, 5}, {5, 1}, {3, 3}, {2, 3}, {7, 7}, {3, 11}, {4, 2}}) {
        const cuda::DigitCounter c = cuda::DigitCounter::of(mid, lo);
        for (int first = 0; first < kTileK; ++first) {
            cuda::Digits d = c.at(first);
            for (int64_t k = first; k < 40 * mid * lo; k += kTileK) {
                ASSERT_EQ(d.hi, k / (mid * lo)) << mid << "x" << lo << " k " << k;
                ASSERT_EQ(d.mid, k / lo % mid) << mid << "x" << lo << " k " << k;
                ASSERT_EQ(d.lo, k % lo) << mid << "x" << lo << " k " << k;
                c.advance(d);
            }
            cuda::Digits e = c.at(first);
            for (int64_t k = first; k < 3 * mid * lo + kTileK; ++k) {
                ASSERT_EQ(e.hi * mid * lo + e.mid * lo + e.lo, k) << mid << "x" << lo;
                ASSERT_TRUE(e.mid < mid && e.lo < lo) << mid << "x" << lo << " k " << k;
                c.next(e);
            }
        }
    }
}

TEST(CudaTileOperands, WalksKeepTheirOffsetLinearInTheirDigits) {
    // Strides that tell the digits apart, and negative ones (the flipped weights' walk). Plain
    // locals, not structured bindings: the lambda below captures them (clang 14, the tsan build).
    for (const auto& digits : std::vector<std::pair<int64_t, int64_t>>{
             {1, 1}, {1, 5}, {5, 1}, {3, 3}, {2, 3}, {7, 7}, {3, 11}, {4, 2}})
        for (const auto& strides : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
                 {1000003, 1009, 17}, {1000003, -1009, -17}}) {
            const int64_t mid = digits.first, lo = digits.second;
            const int64_t s_hi = std::get<0>(strides), s_mid = std::get<1>(strides),
                          s_lo = std::get<2>(strides);
            const cuda::WalkCounter c = cuda::WalkCounter::of(mid, lo, s_hi, s_mid, s_lo);
            const auto expect_at = [&](const cuda::Walk& w, int64_t k) {
                ASSERT_EQ(w.d.hi, k / (mid * lo)) << mid << "x" << lo << " k " << k;
                ASSERT_EQ(w.d.mid, k / lo % mid) << mid << "x" << lo << " k " << k;
                ASSERT_EQ(w.d.lo, k % lo) << mid << "x" << lo << " k " << k;
                ASSERT_EQ(w.off, w.d.hi * s_hi + w.d.mid * s_mid + w.d.lo * s_lo) << " k " << k;
            };
            for (int first = 0; first < kTileK; ++first) {
                cuda::Walk w = c.at(first);
                for (int64_t k = first; k < 40 * mid * lo; k += kTileK) {
                    expect_at(w, k);
                    c.advance(w);
                }
                cuda::Walk e = c.at(first);
                for (int64_t k = first; k < 3 * mid * lo + kTileK; ++k) {
                    expect_at(e, k);
                    c.next(e);
                }
            }
        }
}

TEST(CudaTileOperands, StridedOperandsReadBothLayouts) {
    const std::vector<float> a = numbered(13 * 21);
    const cuda::StridedOperand rows{a.data(), 21, 1}, cols{a.data(), 1, 13};
    expect_reads(rows, 13, 21, [&](int64_t i, int64_t k) { return a[i * 21 + k]; });
    expect_reads(cols, 13, 21, [&](int64_t i, int64_t k) { return a[k * 13 + i]; });
}

std::vector<Conv2dParams> shapes() {
    using test::geom;  // (n, ci, h, w, co, kh, kw, stride, pad)
    return {geom(3, 2, 6, 6, 3, 3, 3, 1, 1),  geom(2, 3, 5, 7, 4, 3, 2, 2, 1),
            geom(2, 2, 7, 4, 3, 1, 3, 1, 1),  geom(3, 4, 5, 5, 2, 1, 1, 1, 0),
            geom(2, 3, 2, 2, 2, 7, 7, 1, 3),  geom(5, 2, 3, 2, 3, 2, 2, 2, 0),
            geom(1, 1, 2, 66, 2, 1, 70, 3, 2)};  // taps past the live bitmask's 64, 68 and 69 dead
}

TEST(CudaTileOperands, TheConvolutionsOperandsReadTheirDefinitions) {
    for (const Conv2dParams& p : shapes()) {
        SCOPED_TRACE(test::describe(p));
        const int64_t P = p.ho * p.wo, R = p.ci * p.kh * p.kw;
        const std::vector<float> x = numbered(test::xsize(p)), w = numbered(test::wsize(p)),
                                 dy = numbered(test::ysize(p));
        // forward: A = the weights, B = the padded input, live = the tap reads the image
        const cuda::ConvWeight wt{w.data(), p.ci, p.kh, p.kw};
        expect_reads(cuda::weight_operand(wt), p.co, R, [&](int64_t o, int64_t r) {
            return wt(o, r / (p.kh * p.kw), r / p.kw % p.kh, r % p.kw);
        });
        const cuda::ForwardInput fx = cuda::ForwardInput::of(x.data(), p);
        expect_reads(fx, p.n * P, R,
                     [&](int64_t j, int64_t r) { return cuda::conv_xpad(x.data(), p, r, j); });
        expect_live(fx, R, [&](int64_t r) { return cuda::conv_tap_r_live(p, r); });
        // wgrad from sample s0 on: A = dy by (channel, position), B = the padded input by tap
        for (const int64_t s0 : {int64_t{0}, p.n - 1}) {
            const int64_t K = (p.n - s0) * P, o_lo = p.co > 1 ? 1 : 0;
            expect_reads(cuda::WgradGradOut::of(dy.data(), p, s0, o_lo), p.co - o_lo, K,
                         [&](int64_t i, int64_t k) {
                             return dy[((s0 + k / P) * p.co + o_lo + i) * P + k % P];
                         });
            expect_reads(cuda::WgradInput::of(x.data(), p, s0), R, K, [&](int64_t r, int64_t k) {
                return cuda::conv_xpad(x.data(), p, r, s0 * P + k);
            });
        }
        // dgrad's per-tap values from sample s_lo on: B = dy by (channel, column)
        const int64_t s_lo = p.n - 1;
        expect_reads(
            cuda::DgradGradOut::of(dy.data(), p, s_lo), (p.n - s_lo) * P, p.co,
            [&](int64_t j, int64_t o) { return dy[((s_lo + j / P) * p.co + o) * P + j % P]; });
        // dgrad as the transposed forward (square kernels): A = the flipped weights; and both
        // operands with the taps in tap-major order (r = (ki, kj, o)), from term k0 on too
        if (p.kh == p.kw) {
            const cuda::FlippedWeight fw{w.data(), p.ci, p.kh};
            const int64_t K = p.kh;
            expect_reads(cuda::weight_operand(fw), p.ci, p.co * K * K, [&](int64_t oq, int64_t r) {
                return fw(oq, r / (K * K), r / K % K, r % K);
            });
            const Conv2dParams q = cuda::conv_dgrad_as_forward(p);  // its taps: (o, ki, kj)
            const auto tap_major = [&](int64_t r) {  // (ki, kj, o) -> the channel-major tap
                return (r % p.co * K + r / (p.co * K)) * K + r / p.co % K;
            };
            const auto flipped = [&](int64_t oq, int64_t r) {
                const int64_t rq = tap_major(r);
                return fw(oq, rq / (K * K), rq / K % K, rq % K);
            };
            const auto dy_padded = [&](int64_t j, int64_t r) {
                return cuda::conv_xpad(dy.data(), q, tap_major(r), j);
            };
            const int64_t Kq = p.co * K * K, cols = p.n * p.h * p.w;
            const auto a = cuda::dgrad_tap_major_weight(w.data(), p);
            const auto b = cuda::dgrad_tap_major_input(dy.data(), p);
            expect_reads(a, p.ci, Kq, flipped);
            expect_reads(b, cols, Kq, dy_padded);
            expect_live(b, Kq, [&](int64_t r) { return cuda::conv_tap_r_live(q, tap_major(r)); });
            const int64_t k0 = K * p.co - 1;  // past a row, less one term
            expect_reads(cuda::from_term(a, k0), p.ci, Kq - k0,
                         [&](int64_t oq, int64_t k) { return flipped(oq, k0 + k); });
            expect_reads(cuda::from_term(b, k0), cols, Kq - k0,
                         [&](int64_t j, int64_t k) { return dy_padded(j, k0 + k); });
        }
    }
}

}  // namespace
}  // namespace dt::kernels

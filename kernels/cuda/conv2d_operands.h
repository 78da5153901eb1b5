// SPDX-License-Identifier: MIT
// The operands of the convolution's tiled block programs (conv2d_tiled_bodies.h) in the form
// tile_operands.h describes: each reads its element from a line (row or column) worked out
// once and a k position moved on without division. Which element each one reads is the
// definition in conv2d_tiled_bodies.h (conv_xpad and kernels/conv2d.h's recipe); only the
// address arithmetic lives here. Map coordinates (for the padding's test) are 32-bit; an
// element's offset is its line's plus its position's, the latter walked along with the position's
// digits (WalkCounter, tile_operands.h), 64-bit: one addition per element.
#pragma once
#include <cstdint>

#include "kernels/conv2d.h"
#include "kernels/cuda/conv2d_bodies.h"
#include "kernels/cuda/tile_operands.h"

namespace dt::kernels::cuda {

/// Whether each kernel offset of one axis reads the image somewhere (conv_tap_live), as bits,
/// for axes of up to 64 offsets; longer axes ask conv_tap_live for the rest.
struct TapAxisLive {
    uint64_t bits;
    int64_t n_in, n_out, pad, stride;

    DT_HD static TapAxisLive of(int64_t taps, int64_t n_in, int64_t n_out, int64_t pad,
                                int64_t stride) {
        TapAxisLive a{0, n_in, n_out, pad, stride};
        for (int64_t k = 0; k < taps && k < 64; ++k)
            if (conv_tap_live(k, n_in, n_out, pad, stride)) a.bits |= uint64_t{1} << k;
        return a;
    }
    DT_HD bool operator()(int32_t k) const {
        return k < 64 ? (bits >> k & 1u) != 0 : conv_tap_live(k, n_in, n_out, pad, stride);
    }
};

/// The map geometry of convolution q that the padded-input operands need.
struct InputMap {
    const float* x;
    int64_t sample_size, hw;  // Ci * H * W, H * W
    int32_t h, w, stride, pad;

    DT_HD static InputMap of(const float* x, const Conv2dParams& q) {
        return InputMap{x,
                        q.ci * q.h * q.w,
                        q.h * q.w,
                        static_cast<int32_t>(q.h),
                        static_cast<int32_t>(q.w),
                        static_cast<int32_t>(q.stride),
                        static_cast<int32_t>(q.pad)};
    }
    /// Whether (ih, iw) is inside the map (not in the padding).
    DT_HD bool inside(int32_t ih, int32_t iw) const {
        return static_cast<uint32_t>(ih) < static_cast<uint32_t>(h) &&
               static_cast<uint32_t>(iw) < static_cast<uint32_t>(w);
    }
    /// x[at] where (ih, iw) is inside the map, else +0 (the padding); `at` is the element's
    /// offset, valid only inside.
    DT_HD float at(int64_t at, int32_t ih, int32_t iw) const {
        return inside(ih, iw) ? x[at] : 0.0f;
    }
};

/// The order of a convolution's taps r along k: channel-major, r = (c, ki, kj) (the forward's
/// recipe, kernels/conv2d.h), or tap-major, r = (ki, kj, c) (conv.dgrad's exact and atomic modes
/// as the transposed forward: a tap's chain over the channels is one stretch of k, so cutting
/// the chains every C terms gives the per-tap values, conv2d_dgrad_tiled_bodies.h).
enum class TapOrder { kChannelMajor, kTapMajor };

/// The forward's B: the padded input of convolution q (conv_xpad), element (tap r, column j),
/// r (in the order O) the position, j = (sample, output row, output column) the line. live: the
/// tap reads the image somewhere. The element's offset is the line's (its sample and where tap
/// (0, 0) reads) plus the tap's (c * H * W + ki * W + kj, walked).
template <TapOrder O>
struct PaddedInput {
    static constexpr bool kTapMajor = O == TapOrder::kTapMajor;
    InputMap map;
    int64_t P;
    int32_t wo;
    WalkCounter taps;  // the digits (c, ki, kj), or (ki, kj, c) tap-major, and the offset
    TapAxisLive live_h, live_w;

    DT_HD static PaddedInput of(const float* x, const Conv2dParams& q) {
        return PaddedInput{InputMap::of(x, q),
                           q.ho * q.wo,
                           static_cast<int32_t>(q.wo),
                           kTapMajor ? WalkCounter::of(q.kw, q.ci, q.w, 1, q.h * q.w)
                                     : WalkCounter::of(q.kh, q.kw, q.h * q.w, q.w, 1),
                           TapAxisLive::of(q.kh, q.h, q.ho, q.pad, q.stride),
                           TapAxisLive::of(q.kw, q.w, q.wo, q.pad, q.stride)};
    }
    struct Line {
        int64_t base;      // the column's sample's offset + ih0 * W + iw0
        int32_t ih0, iw0;  // where tap (0, 0) of the column's output position reads
    };
    using Pos = Walk;
    /// The tap's row and column digits.
    DT_HD static int32_t ki(const Pos& d) { return kTapMajor ? d.d.hi : d.d.mid; }
    DT_HD static int32_t kj(const Pos& d) { return kTapMajor ? d.d.mid : d.d.lo; }
    DT_HD Line line(int64_t j) const {
        const int32_t at = static_cast<int32_t>(j % P);
        const int32_t ih0 = at / wo * map.stride - map.pad, iw0 = at % wo * map.stride - map.pad;
        return Line{j / P * map.sample_size + int64_t{ih0} * map.w + iw0, ih0, iw0};
    }
    DT_HD Pos pos(int64_t r) const { return taps.at(r); }
    DT_HD void advance(Pos& d) const { taps.advance(d); }
    DT_HD void next(Pos& d) const { taps.next(d); }
    DT_HD float at(const Line& l, const Pos& d) const {
        return map.at(l.base + d.off, l.ih0 + ki(d), l.iw0 + kj(d));
    }
    DT_HD bool live(const Pos& d) const { return live_h(ki(d)) && live_w(kj(d)); }
};
using ForwardInput = PaddedInput<TapOrder::kChannelMajor>;

/// The forward's A for conv.dgrad as the transposed forward (FlippedWeight, square kernels of
/// side K, taps in the order O): element (output channel oq, tap r = (cq, ki, kj), or
/// (ki, kj, cq) tap-major) = w[cq, oq, K-1-ki, K-1-kj], at the line's offset
/// (oq * K * K + (K - 1) * K + K - 1) plus the tap's (cq * Ci * K * K - ki * K - kj, walked: the
/// strides may be negative). co: the transposed convolution's input channels (w's outputs).
template <TapOrder O>
struct FlippedWeightOperand {
    const float* w;
    int64_t k;
    WalkCounter taps;

    DT_HD static FlippedWeightOperand of(const FlippedWeight& f, int64_t co) {
        const int64_t per_channel = f.ci * f.k * f.k;
        return FlippedWeightOperand{f.w, f.k,
                                    O == TapOrder::kTapMajor
                                        ? WalkCounter::of(f.k, co, -f.k, -1, per_channel)
                                        : WalkCounter::of(f.k, f.k, per_channel, -f.k, -1)};
    }
    using Line = int64_t;
    using Pos = Walk;
    DT_HD Line line(int64_t oq) const { return oq * k * k + (k - 1) * k + (k - 1); }
    DT_HD Pos pos(int64_t r) const { return taps.at(r); }
    DT_HD void advance(Pos& d) const { taps.advance(d); }
    DT_HD float at(Line l, const Pos& d) const { return w[l + d.off]; }
};

/// The forward's A: the weights w (Co, Ci*Kh*Kw) row-major, or flipped (FlippedWeight).
DT_HD StridedOperand weight_operand(const ConvWeight& wt) {
    return StridedOperand{wt.w, wt.ci * wt.kh * wt.kw, 1};
}
DT_HD FlippedWeightOperand<TapOrder::kChannelMajor> weight_operand(const FlippedWeight& wt) {
    return FlippedWeightOperand<TapOrder::kChannelMajor>::of(wt, 0);  // (co: no digit of it)
}

/// conv.wgrad's A for the samples from s0: dy, element (channel o_lo + i, term k) with
/// k = (sample s0 + s, output row, output column) the position; its offset is the line's
/// ((s0 * Co + o_lo + i) * P) plus the position's (s * Co * P + oh * Wo + ow, walked).
struct WgradGradOut {
    const float* dy;
    int64_t o_lo, s0, co, P;
    WalkCounter positions;  // k = (s * Ho + oh) * Wo + ow, off = s * Co * P + oh * Wo + ow

    DT_HD static WgradGradOut of(const float* dy, const Conv2dParams& p, int64_t s0, int64_t o_lo) {
        const int64_t P = p.ho * p.wo;
        return WgradGradOut{dy, o_lo, s0, p.co, P, WalkCounter::of(p.ho, p.wo, p.co * P, p.wo, 1)};
    }
    using Line = int64_t;
    using Pos = Walk;
    DT_HD Line line(int64_t i) const { return (s0 * co + o_lo + i) * P; }
    DT_HD Pos pos(int64_t k) const { return positions.at(k); }
    DT_HD void advance(Pos& d) const { positions.advance(d); }
    DT_HD float at(Line l, const Pos& d) const { return dy[l + d.off]; }
};

/// conv.wgrad's B for the samples from s0: the padded input, element (term k, tap r), k as in
/// WgradGradOut the position, r = (channel, tap row, tap column) the line (conv_xpad). The
/// element (sample s0 + s, channel c, row oh * stride - pad + ki, column ow * stride - pad + kj)
/// has the line's offset (s0's sample, channel c, row ki - pad, column kj - pad) plus the
/// position's (s * Ci * H * W + oh * stride * W + ow * stride, walked).
struct WgradInput {
    InputMap map;
    int64_t s0, kh, kw;
    WalkCounter positions;  // k = (s * Ho + oh) * Wo + ow

    DT_HD static WgradInput of(const float* x, const Conv2dParams& p, int64_t s0) {
        const InputMap m = InputMap::of(x, p);
        return WgradInput{
            m, s0, p.kh, p.kw,
            WalkCounter::of(p.ho, p.wo, m.sample_size, int64_t{m.stride} * m.w, m.stride)};
    }
    struct Line {
        int64_t base;    // s0's sample, channel c, row ki - pad, column kj - pad
        int32_t ki, kj;  // ki - pad, kj - pad
    };
    using Pos = Walk;
    DT_HD Line line(int64_t r) const {
        const int64_t c = r / (kh * kw);
        const int32_t ki = static_cast<int32_t>(r / kw % kh) - map.pad,
                      kj = static_cast<int32_t>(r % kw) - map.pad;
        return Line{s0 * map.sample_size + c * map.hw + int64_t{ki} * map.w + kj, ki, kj};
    }
    DT_HD Pos pos(int64_t k) const { return positions.at(k); }
    DT_HD void advance(Pos& d) const { positions.advance(d); }
    DT_HD void next(Pos& d) const { positions.next(d); }
    DT_HD float at(const Line& l, const Pos& d) const {
        return map.at(l.base + d.off, d.d.mid * map.stride + l.ki, d.d.lo * map.stride + l.kj);
    }
    DT_HD bool live(const Pos&) const { return true; }  // dead taps: left out by the output
};

/// conv.dgrad's per-tap B for the samples from s_lo: dy, element (channel o, column j) with
/// j = (sample s_lo + s, output position) the line: dy's stride of o is P, as a StridedOperand
/// (whose line stride goes unused), the line's offset (s_lo + j / P) * Co * P + j % P.
struct DgradGradOut : StridedOperand {
    int64_t s_lo, co, P;

    DT_HD static DgradGradOut of(const float* dy, const Conv2dParams& p, int64_t s_lo) {
        const int64_t P = p.ho * p.wo;
        return DgradGradOut{{dy, 0, P}, s_lo, p.co, P};
    }
    DT_HD Line line(int64_t j) const { return (s_lo + j / P) * co * P + j % P; }
};

}  // namespace dt::kernels::cuda

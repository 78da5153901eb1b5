// SPDX-License-Identifier: MIT
// How the register-tiled block program (tile_gemm.h) reads its operands: as a matrix seen along
// k, A by rows i and B by columns j, so that no element's address needs a division inside the k
// loop. A thread loads the same rows (A) or column (B) in every chunk of kTileK k's, at k's that
// move on by kTileK from one chunk to the next: it works out its lines and k positions once
// (divisions allowed there) and then only moves the positions on. An integer division by a
// runtime value costs a GPU tens of instructions (64-bit: a call); recomputing a convolution's
// (channel, tap row, tap column) or (sample, row, column) from a flat index for every element
// made the loads cost many times the fma's they feed.
//
// An operand type provides:
//   Line  line(int64_t index) const      row i (A) or column j (B), worked out once per thread
//   Pos   pos(int64_t k) const           where term k is, worked out once per thread
//   void  advance(Pos&) const            the position kTileK terms further on, no division
//   void  next(Pos&) const               (B) the position one term further on, no division
//   float at(const Line&, const Pos&) const   the element; called inside the matrix only
//   bool  live(const Pos&) const         (B) whether term k is in the chains at all
// line() and pos() may be called for indices outside the matrix (they read nothing).
// Operand types are values with no references to the caller: host tests run them unchanged.
#pragma once
#include <cstdint>

#include "kernels/common/hd.h"

namespace dt::kernels::cuda {

/// The k's of one shared-memory chunk of the tiled block program; positions move on by this.
inline constexpr int kTileK = 8;

/// A flat index as three digits (hi, mid, lo), index = (hi * mid_radix + mid) * lo_radix + lo,
/// e.g. a convolution's tap (channel, tap row, tap column) or a column (sample, row, column).
/// Digits fit 32 bits: they are channel, sample or map coordinates, not flat offsets.
struct Digits {
    int32_t hi, mid, lo;
};

/// Digits of an index and their move by kTileK, whose own digits are worked out once (so the
/// move is three additions and two carries: each step digit is below its radix, so one carry
/// per digit suffices).
struct DigitCounter {
    int32_t mid_radix, lo_radix;
    int32_t step_hi, step_mid, step_lo;

    DT_HD static DigitCounter of(int64_t mid_radix, int64_t lo_radix) {
        const int64_t per_hi = mid_radix * lo_radix;
        const int64_t rest = kTileK % per_hi;
        return DigitCounter{static_cast<int32_t>(mid_radix), static_cast<int32_t>(lo_radix),
                            static_cast<int32_t>(kTileK / per_hi),
                            static_cast<int32_t>(rest / lo_radix),
                            static_cast<int32_t>(rest % lo_radix)};
    }
    DT_HD Digits at(int64_t index) const {
        const int64_t per_hi = static_cast<int64_t>(mid_radix) * lo_radix;
        return Digits{static_cast<int32_t>(index / per_hi),
                      static_cast<int32_t>(index / lo_radix % mid_radix),
                      static_cast<int32_t>(index % lo_radix)};
    }
    DT_HD void advance(Digits& d) const {
        d.lo += step_lo;
        d.mid += step_mid;
        d.hi += step_hi;
        if (d.lo >= lo_radix) {
            d.lo -= lo_radix;
            ++d.mid;
        }
        if (d.mid >= mid_radix) {
            d.mid -= mid_radix;
            ++d.hi;
        }
    }
    /// The digits of index + 1.
    DT_HD void next(Digits& d) const {
        if (++d.lo < lo_radix) return;
        d.lo = 0;
        if (++d.mid < mid_radix) return;
        d.mid = 0;
        ++d.hi;
    }
};

/// Digits with an offset that is linear in them, off = hi * s_hi + mid * s_mid + lo * s_lo,
/// moved on together (the same carries), so that an operand's address is one addition: the
/// offset of a convolution's tap inside a sample, or of a position inside the batch.
struct Walk {
    Digits d;
    int64_t off;
};
struct WalkCounter {
    DigitCounter digits;
    int64_t s_hi, s_mid, s_lo;
    int64_t step_off;             // the offset of kTileK's digits
    int64_t carry_lo, carry_mid;  // what a carry out of lo / mid adds to the offset

    DT_HD static WalkCounter of(int64_t mid_radix, int64_t lo_radix, int64_t s_hi, int64_t s_mid,
                                int64_t s_lo) {
        const DigitCounter c = DigitCounter::of(mid_radix, lo_radix);
        return WalkCounter{c,
                           s_hi,
                           s_mid,
                           s_lo,
                           c.step_hi * s_hi + c.step_mid * s_mid + c.step_lo * s_lo,
                           s_mid - lo_radix * s_lo,
                           s_hi - mid_radix * s_mid};
    }
    DT_HD Walk at(int64_t index) const {
        const Digits d = digits.at(index);
        return Walk{d, d.hi * s_hi + d.mid * s_mid + d.lo * s_lo};
    }
    /// DigitCounter::advance, the offset alike.
    DT_HD void advance(Walk& w) const {
        w.d.lo += digits.step_lo;
        w.d.mid += digits.step_mid;
        w.d.hi += digits.step_hi;
        w.off += step_off;
        if (w.d.lo >= digits.lo_radix) {
            w.d.lo -= digits.lo_radix;
            ++w.d.mid;
            w.off += carry_lo;
        }
        if (w.d.mid >= digits.mid_radix) {
            w.d.mid -= digits.mid_radix;
            ++w.d.hi;
            w.off += carry_mid;
        }
    }
    /// The walk of index + 1.
    DT_HD void next(Walk& w) const {
        w.off += s_lo;
        if (++w.d.lo < digits.lo_radix) return;
        w.d.lo = 0;
        w.off += carry_lo;
        if (++w.d.mid < digits.mid_radix) return;
        w.d.mid = 0;
        w.off += carry_mid;
        ++w.d.hi;
    }
};

/// A matrix of fixed strides: element (line, k) at p[line * line_stride + k * k_stride]. A
/// GEMM's operands in either layout, a convolution's weights as (Co, Ci*Kh*Kw).
struct StridedOperand {
    const float* p;
    int64_t line_stride, k_stride;

    using Line = int64_t;  // the line's offset
    using Pos = int64_t;   // the term's offset
    DT_HD Line line(int64_t index) const { return index * line_stride; }
    DT_HD Pos pos(int64_t k) const { return k * k_stride; }
    DT_HD void advance(Pos& at_k) const { at_k += kTileK * k_stride; }
    DT_HD void next(Pos& at_k) const { at_k += k_stride; }
    DT_HD float at(Line line_off, Pos k_off) const { return p[line_off + k_off]; }
    DT_HD bool live(Pos) const { return true; }
};

/// Operand op seen from term k0 on: its term k is op's term k0 + k (a block's stretch of K,
/// where the blocks split the chains).
template <class Op>
struct FromTerm : Op {
    int64_t k0;
    DT_HD typename Op::Pos pos(int64_t k) const { return Op::pos(k0 + k); }
};
template <class Op>
DT_HD FromTerm<Op> from_term(const Op& op, int64_t k0) {
    return FromTerm<Op>{op, k0};
}

}  // namespace dt::kernels::cuda

// SPDX-License-Identifier: MIT
// Contract of exact_add_rows: adding a wave of rows into per-element exact accumulators, fast
// (host). Reference: ref::exact_add_rows (one exact_add per leaf), kernels/ref/exact_rows_ref.h.
// The exact mode's cross-sample sites add N leaves into one ExactAcc per output element
// (kernels/common/accum_exact.h); at one superaccumulator add per leaf and element that is the
// mode's cost.
// Here the leaves of one element within a wave of at most kExactRowsMaxCount rows usually span
// few binades, so they are first summed EXACTLY as integers: each leaf is +-m * 2^p (units of
// 2^-149, m < 2^24); with base = the least p of the element's nonzero leaves and every
// p - base <= kExactRowsSpread, the terms m << (p - base) are < 2^58 and 16 of them sum below
// 2^62 in an int64, which is then folded into the accumulator once (exact_fold_bin). Elements
// whose leaves spread wider, or hold Inf/NaN, or are huge, take the plain per-leaf path.
// ORDER: none (integer arithmetic): the accumulator ends up holding the same exact value as
// with exact_add of every leaf, so exact_value gives the same bits.
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact.h"

namespace dt::kernels {

constexpr int64_t kExactRowsMaxCount = 16;
constexpr uint32_t kExactRowsSpread = 34;  // 24 + 34 + log2(16) = 62 bits

namespace cpu {
/// acc[i] += x[j * stride + i] for j < count, i < n, exactly (any count: more than
/// kExactRowsMaxCount rows are taken in waves of that many). At most 1 unit of headroom per
/// element per wave on the fast path, 1 per row on the plain one.
void exact_add_rows(common::ExactAcc* acc, const float* x, int64_t stride, int64_t count,
                    int64_t n);

/// out[i] = the exact sum of x[j * stride + i] over j < count, rounded once (exact_value's
/// result, bit for bit), i < n; any count < 2^31. Without an accumulator when it can: an element
/// whose nonzero leaves span at most exact_sum_rows_spread(count) binades (and holds no Inf/NaN
/// and no huge value) is summed in one int64 at its least exponent, converted to float (one
/// rounding, RNE) and scaled by a power of two, which is exact while the result is a normal
/// float; any other element goes through an ExactAcc. ORDER: none (integer arithmetic).
void exact_sum_rows(float* out, const float* x, int64_t stride, int64_t count, int64_t n);

/// a += x[0] + ... + x[n-1] exactly, for long arrays (host; the same value as
/// common::exact_add_array). The array is read as rows of 16 lanes, up to 1024 rows at a time;
/// each lane's terms are summed in one int64 when they fit (exact_sum_rows_spread) and folded
/// into a once, else added one by one. Precondition as exact_add_array: a holds at most 2^30
/// units on entry; it is normalised on return.
void exact_add_lanes(common::ExactAcc& a, const float* x, int64_t n);

/// a += every x[j * stride + i] (j < count, i < n) exactly: a strided block of rows into ONE
/// accumulator (e.g. a channel's elements over the samples of a batch). Each column i is summed
/// down up to 1024 rows in one int64 when its exponents fit (exact_sum_rows_spread) and folded
/// once, else added one by one. Precondition and return state as exact_add_lanes.
void exact_add_columns(common::ExactAcc& a, const float* x, int64_t stride, int64_t count,
                       int64_t n);
}  // namespace cpu

/// 24-bit terms, count of them: 24 + spread + ceil(log2(count)) <= 62 bits.
constexpr uint32_t exact_sum_rows_spread(int64_t count) {
    uint32_t bits = 0;
    while ((int64_t{1} << bits) < count) ++bits;
    return bits >= 38 ? 0u : 38u - bits;
}

}  // namespace dt::kernels

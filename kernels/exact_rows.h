// SPDX-License-Identifier: MIT
// Contract of the exact row sums (host): exact_add_rows (a wave of rows into per-element
// ExactAccs), exact_sum_rows (columns rounded straight to float), exact_add_lanes (a long array
// into one ExactAcc), exact_add_columns (a strided block into one ExactAcc). References: one
// exact_add per term, kernels/ref/exact_rows_ref.h. The exact mode's cross-sample sites sum N
// leaves per output element (kernels/common/accum_exact.h); at one superaccumulator add per term
// that is the mode's cost.
// Here the terms of one element usually span few binades, so they are first summed EXACTLY as
// integers: each term is +-m * 2^p (units of 2^-149, m < 2^24); with base = max(the least p of
// the nonzero terms, the greatest p - spread), every term at p >= base gives m << (p - base)
// < 2^(24 + spread), and count of them (24 + spread + log2(count) <= 62 bits: spread 34 for 16
// terms, exact_sum_rows_spread) sum in an int64, which is folded into the accumulator once
// (exact_fold_bin) or rounded once. Nonzero terms below base (outliers: a few tiny values) are
// added one by one; elements holding Inf/NaN or huge values take the plain per-term path.
// ORDER: none (integer arithmetic): the accumulator ends up holding the same exact value as
// with exact_add of every term, so exact_value gives the same bits.
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact.h"

namespace dt::kernels {

constexpr int64_t kExactRowsMaxCount = 1024;  // rows per wave of exact_add_rows (spread 28)

namespace cpu {
/// acc[i] += x[j * stride + i] for j < count, i < n, exactly (any count: more than
/// kExactRowsMaxCount rows are taken in waves of that many; a batch's leaves are one wave, one
/// fold per element). At most 1 unit of headroom per element per row.
void exact_add_rows(common::ExactAcc* acc, const float* x, int64_t stride, int64_t count,
                    int64_t n);

/// out[i] = the exact sum of x[j * stride + i] over j < count, rounded once (exact_value's
/// result, bit for bit), i < n; any count < 2^31. Without an accumulator when it can: an element
/// whose int64 sum holds all its terms (none below base, no Inf/NaN, no huge value) is
/// converted to float (one rounding, RNE) and scaled by a power of two, which is exact while the
/// result is a normal float; any other element goes through an ExactAcc.
void exact_sum_rows(float* out, const float* x, int64_t stride, int64_t count, int64_t n);

/// a += x[0] + ... + x[n-1] exactly, for long arrays (host; the same value as
/// common::exact_add_array). The array is read as rows of 16 columns (exact_add_columns), then
/// the tail of fewer than 16 one by one.
/// Precondition as exact_add_array: a holds at most 2^30 units on entry; it is normalised on
/// return.
void exact_add_lanes(common::ExactAcc& a, const float* x, int64_t n);

/// a += every x[j * stride + i] (j < count, i < n) exactly: a strided block of rows into ONE
/// accumulator (e.g. a channel's elements over the samples of a batch). Each column i is summed
/// down up to 1024 rows in one int64 and folded once (outliers one by one). Precondition and
/// return state as exact_add_lanes.
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

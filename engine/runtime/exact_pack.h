// SPDX-License-Identifier: MIT
// Exact accumulators as the processes of a data-parallel run exchange them: normalised
// (kernels/common/accum_exact.h: limbs 0..7 are digits in [0, 2^32), limb 8 the signed rest), so
// the digits travel as 32-bit words and only limb 8 needs 64 bits: 44 bytes instead of the 76 of
// nine int64 limbs and a flag word. The sum of two packed accumulators (exact_packed_merge, the
// MPI reduction op) unpacks, adds limb-wise, normalises and packs again: integer arithmetic, so
// it is associative and commutative, and normalisation gives every value one packed form, so
// the result does not depend on the order or grouping in which MPI combines the ranks.
// Host-only; no MPI here (tests/engine/runtime/exact_pack_test.cpp runs without it).
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact.h"

namespace dt {

struct PackedExactAcc {
    // word[0..7]: digits 0..7; word[8], word[9]: limb 8's low and high 32 bits; word[10]: the
    // special flags.
    uint32_t word[11];
};
static_assert(sizeof(PackedExactAcc) == 44);

/// a normalised and packed (a is taken by value: the caller's stays as it was).
inline PackedExactAcc exact_pack(kernels::common::ExactAcc a) {
    namespace c = kernels::common;
    c::exact_normalise(a);
    PackedExactAcc p;
    for (int k = 0; k + 1 < c::kExactLimbs; ++k) p.word[k] = static_cast<uint32_t>(a.limb[k]);
    const auto top = static_cast<uint64_t>(a.limb[c::kExactLimbs - 1]);
    p.word[8] = static_cast<uint32_t>(top);
    p.word[9] = static_cast<uint32_t>(top >> 32);
    p.word[10] = a.special;
    return p;
}

/// The normalised accumulator of p (exact_unpack(exact_pack(a)) has a's value and flags).
inline kernels::common::ExactAcc exact_unpack(const PackedExactAcc& p) {
    namespace c = kernels::common;
    c::ExactAcc a;
    for (int k = 0; k + 1 < c::kExactLimbs; ++k) a.limb[k] = p.word[k];
    a.limb[c::kExactLimbs - 1] =
        static_cast<int64_t>(uint64_t{p.word[8]} | (uint64_t{p.word[9]} << 32));
    a.special = p.word[10];
    return a;
}

/// inout[i] = the packed sum of in[i] and inout[i], for i < n.
void exact_packed_merge(const PackedExactAcc* in, PackedExactAcc* inout, int64_t n);

// ---- the compact exchange: a normalised accumulator's value as an int64 in a bit window ----
// Most gradients' exact sums span few bits: value = s * 2^lo (units of 2^-149) with s well below
// 2^62. Ranks agree on a window per block of elements, send s as an int64 and MPI adds them
// (MPI_SUM on integers: exact, any order), and the owner rounds s * 2^lo once.

/// One pass over an accumulator that need not be normalised: false for a zero value (*lo, *hi,
/// *own 0); else *lo its value's lowest set bit (units of 2^-149), *hi a bound with
/// |value| < 2^hi (the bit length, plus one for a negative value), and *own = value >> lo where
/// hi - lo <= 63, else 0. Out-parameters, not a struct: a returned struct went through the stack
/// and stalled every call on its reload.
bool exact_bits_shifted(const kernels::common::ExactAcc& a, int32_t* lo, int32_t* hi, int64_t* own);

/// An accumulator holding s * 2^lo (units of 2^-149, lo in [0, 287)); not normalised.
kernels::common::ExactAcc exact_from_scaled(int64_t s, int32_t lo);

/// exact_value of s * 2^lo (units of 2^-149, lo in [0, 287)), rounded once.
float exact_value_scaled(int64_t s, int32_t lo);

}  // namespace dt

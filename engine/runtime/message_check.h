// SPDX-License-Identifier: MIT
// Checksums of the blocks that the processes of a data-parallel run exchange
// (engine/runtime/collective_mpi.cpp), so that a message corrupted or cut short on its way is
// found and ends the job before a wrong sum is used. Linear over integers: the checksum of a sum
// of arrays is the sum of their checksums, so a reduce-scatter's result is checked against the
// checksums of its inputs, which travel beside it. Host-only; no MPI here.
#pragma once
#include <cstdint>
#include <cstring>

#include "engine/runtime/exact_pack.h"

namespace dt {

/// The weight of element `i` of an exchange: odd, so that every bit of a word counts; from a
/// table of 1024, so that a block cut short or shifted meets other weights.
inline uint64_t check_weight(int64_t i) {
    return (static_cast<uint32_t>(i & 1023) * 0x9e3779b9u) | 1u;
}

/// Sum over k < n of check_weight(first + k) * v[k], mod 2^64.
uint64_t word_check(const int64_t* v, int64_t n, int64_t first);
/// The same over the bit patterns of floats.
uint64_t word_check(const float* v, int64_t n, int64_t first);

/// dst[k] = a[k] + b[k] (one float add each, the rank tree's pairing) for k < n, and the
/// word_checks (from `first`) of a and b as they are read, and of dst when cdst is not null.
/// dst may be a.
void pair_sum_checked(const float* a, const float* b, float* dst, int64_t n, int64_t first,
                      uint64_t* ca, uint64_t* cb, uint64_t* cdst);

/// The Mersenne prime 2^61 - 1: packed accumulators are checked by their values modulo it, which
/// add as the values do whatever their normalised digits.
constexpr uint64_t kCheckPrime = (uint64_t{1} << 61) - 1;

/// Sum over k < n of (check_weight(first + k) mod M) * (value of p[k] mod M), mod M = 2^61 - 1.
/// The special flags, which combine by or, are not part of it.
uint64_t packed_check(const PackedExactAcc* p, int64_t n, int64_t first);

/// (a + b) mod M for a, b < M.
inline uint64_t check_prime_add(uint64_t a, uint64_t b) {
    const uint64_t s = a + b;
    return s >= kCheckPrime ? s - kCheckPrime : s;
}

}  // namespace dt

// SPDX-License-Identifier: MIT
// Contract of the non-finite scan: where a float buffer holds its first NaN or Inf, and which
// one. The tape's gradient check and the trainer scan every gradient of every step, so the CPU
// kernel tests blocks of 1024 with a vectorised, branch-free exponent test and searches only a
// block that holds a non-finite value element by element. No arithmetic: every implementation
// gives the same answer.
//
// The kernel-table entry is the batched scan first_non_finite_each, which writes its answers
// into words in the device's own memory and returns without waiting for the device: the engine
// scans each gradient as the backward produces it (the tensor may be freed right after) and
// copies every answer back once at the end (engine/ops/non_finite_scan.h), one wait per
// backward on a GPU instead of one per gradient.
//
// A word is kAllFinite when the buffer has no NaN/Inf, else non_finite_word(i, bits of p[i]) for
// the first such i: the index in the high 62 bits, the value's class (sign, NaN or Inf) in the
// low 2. Ordered by index, so the minimum over any set of non-finite elements is the first's
// word (a GPU takes it with an atomic minimum, in any order).
#pragma once
#include <cstdint>

#include "kernels/common/hd.h"

namespace dt::kernels {

/// One buffer of a batched scan: p[0 .. n) (device memory for cuda::).
struct ScanBuffer {
    const float* p = nullptr;
    int64_t n = 0;
};

inline constexpr uint64_t kAllFinite = ~uint64_t{0};

/// True for the bits of a NaN or an Inf (all exponent bits set).
DT_HD bool non_finite_bits(uint32_t bits) { return (bits & 0x7f800000u) == 0x7f800000u; }

/// The word of non-finite element i with float bits `bits`: i << 2 | NaN << 1 | sign.
DT_HD uint64_t non_finite_word(int64_t i, uint32_t bits) {
    const uint64_t nan = (bits & 0x007fffffu) != 0 ? 2u : 0u;
    return static_cast<uint64_t>(i) << 2 | nan | (bits >> 31);
}

/// The element index a word names, -1 for kAllFinite.
inline int64_t non_finite_index(uint64_t word) {
    return word == kAllFinite ? -1 : static_cast<int64_t>(word >> 2);
}

/// The bits of the value a word names: +-Inf, or a quiet NaN of its sign (the payload is not
/// kept). Meaningless for kAllFinite.
inline uint32_t non_finite_value_bits(uint64_t word) {
    const uint32_t sign = static_cast<uint32_t>(word & 1u) << 31;
    return sign | ((word & 2u) != 0 ? 0x7fc00000u : 0x7f800000u);
}

namespace ref {
inline int64_t first_non_finite(const float* p, int64_t n);
}  // namespace ref

namespace cpu {
/// Index of the first NaN or Inf in p[0 .. n), or -1.
int64_t first_non_finite(const float* p, int64_t n);
/// words[i] = the word of buffer b[i] (above), for i < count.
void first_non_finite_each(const ScanBuffer* b, int64_t count, uint64_t* words);
}  // namespace cpu

namespace cuda {  // kernels/cuda/elementwise.cu: device pointers, words included; on the stream
void first_non_finite_each(const ScanBuffer* b, int64_t count, uint64_t* words);
}  // namespace cuda

}  // namespace dt::kernels

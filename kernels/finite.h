// SPDX-License-Identifier: MIT
// Contract of the non-finite scan: where a float buffer holds its first NaN or Inf, and which
// one. The tape's gradient check and the trainer scan every gradient of every step, so the CPU
// kernel tests blocks of 1024 with a vectorised, branch-free exponent test and searches only a
// block that holds a non-finite value element by element. No arithmetic: every implementation
// gives the same answer.
//
// The kernel-table entry is the batched scan first_non_finite_each, which records its answers
// in words in the device's own memory and returns without waiting for the device: the engine
// scans the gradients of a backward, 16 per call on a GPU (one launch: blockIdx.y picks the
// buffer), and copies every answer back once at the end (engine/ops/non_finite_scan.h), one
// wait per backward on a GPU instead of one per gradient.
//
// An answer is a mark: kNoneFound (0) while no NaN/Inf was seen, else non_finite_mark(i, bits
// of p[i]) = ~(i << 2 | NaN << 1 | sign): the element's index and its value's class, complemented
// so that the first index has the largest mark. The scan max-combines the marks of every
// non-finite element into the buffer's word (a GPU with an atomic maximum, in any order): the
// first one's mark is what stays. The words start at 0, zeroed by the caller: one memset for all
// the scans of a backward.
#pragma once
#include <cstdint>

#include "kernels/common/hd.h"

namespace dt::kernels {

/// One buffer of a batched scan: p[0 .. n) (device memory for cuda::).
struct ScanBuffer {
    const float* p = nullptr;
    int64_t n = 0;
};

inline constexpr uint64_t kNoneFound = 0;

/// True for the bits of a NaN or an Inf (all exponent bits set).
DT_HD bool non_finite_bits(uint32_t bits) { return (bits & 0x7f800000u) == 0x7f800000u; }

/// The mark of non-finite element i with float bits `bits`: ~(i << 2 | NaN << 1 | sign).
DT_HD uint64_t non_finite_mark(int64_t i, uint32_t bits) {
    const uint64_t nan = (bits & 0x007fffffu) != 0 ? 2u : 0u;
    return ~(static_cast<uint64_t>(i) << 2 | nan | (bits >> 31));
}

/// The element index a mark names, -1 for kNoneFound.
inline int64_t non_finite_index(uint64_t mark) {
    return mark == kNoneFound ? -1 : static_cast<int64_t>(~mark >> 2);
}

/// The bits of the value a mark names: +-Inf, or a quiet NaN of its sign (the payload is not
/// kept). Meaningless for kNoneFound.
inline uint32_t non_finite_value_bits(uint64_t mark) {
    const uint64_t word = ~mark;
    const uint32_t sign = static_cast<uint32_t>(word & 1u) << 31;
    return sign | ((word & 2u) != 0 ? 0x7fc00000u : 0x7f800000u);
}

namespace ref {
inline int64_t first_non_finite(const float* p, int64_t n);
}  // namespace ref

namespace cpu {
/// Index of the first NaN or Inf in p[0 .. n), or -1.
int64_t first_non_finite(const float* p, int64_t n);
/// words[k] = max(words[k], the mark of buffer b[k]'s first NaN/Inf), for k < count (a finite
/// buffer leaves its word as it is).
void first_non_finite_each(const ScanBuffer* b, int64_t count, uint64_t* words);
}  // namespace cpu

namespace cuda {  // kernels/cuda/elementwise.cu: device pointers, words included; on the stream
void first_non_finite_each(const ScanBuffer* b, int64_t count, uint64_t* words);
}  // namespace cuda

}  // namespace dt::kernels

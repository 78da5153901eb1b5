// SPDX-License-Identifier: MIT
// Division by a number fixed before a launch, for the per-element index arithmetic of the CUDA
// kernels (e.g. the channel of element i, (i / HW) % C). A GPU has no integer divider: nvcc's
// 32-bit division is a reciprocal on the special-function unit plus a correction (about 17
// instructions) behind a 64-bit test, its 64-bit one a subroutine; in a kernel that moves 8
// bytes per element, two of them cost more issue slots than the memory does. Here the host
// works out a multiplier once (make_divisor) and the device divides with a multiply-high, a
// subtraction, an add and two shifts.
// Method (Granlund & Montgomery 1994; Warren, Hacker's Delight, 10-8): for 1 <= d < 2^32 and
// l = ceil(log2 d), m = floor(2^32 * (2^l - d) / d) + 1 (< 2^32); then for every n < 2^32
//   t = mulhi(m, n), q = (t + ((n - t) >> min(l, 1))) >> max(l - 1, 0) = floor(n / d).
// Numerators from 2^32 up (and divisors from 2^32 up) take the plain division: exact either
// way, the fast path is only a shortcut (tests/kernels/common/divisor_test.cpp checks both).
#pragma once
#include <cstdint>

#include "kernels/common/hd.h"

namespace dt::kernels::common {

/// d with its multiplier and shifts (make_divisor); without them (fast_below = 0) for d < 1 or
/// d >= 2^32, where quotient() divides plainly.
struct Divisor {
    int64_t d = 1;
    uint64_t fast_below = 0;  // numerators below this take the multiply (2^32, or 0: none)
    uint32_t m = 1, shift1 = 0, shift2 = 0;
};

/// The divisor d (>= 1; the caller checks), host side.
constexpr Divisor make_divisor(int64_t d) {
    Divisor v;
    v.d = d;
    if (d < 1 || d >= (int64_t{1} << 32)) return v;  // plain division only
    uint32_t l = 0;
    while ((uint64_t{1} << l) < static_cast<uint64_t>(d)) ++l;  // ceil(log2 d), <= 32
    const uint64_t num = ((uint64_t{1} << l) - static_cast<uint64_t>(d)) << 32;  // < 2^63
    v.m = static_cast<uint32_t>(num / static_cast<uint64_t>(d) + 1);
    v.shift1 = l < 1 ? l : 1;
    v.shift2 = l > 1 ? l - 1 : 0;
    v.fast_below = uint64_t{1} << 32;
    return v;
}

DT_HD uint32_t mulhi_u32(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
    return __umulhi(a, b);
#else
    return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
#endif
}

/// floor(n / v.d) for n >= 0.
DT_HD int64_t quotient(int64_t n, const Divisor& v) {
    if (static_cast<uint64_t>(n) < v.fast_below) {
        const uint32_t x = static_cast<uint32_t>(n), t = mulhi_u32(v.m, x);
        return static_cast<int64_t>((t + ((x - t) >> v.shift1)) >> v.shift2);
    }
    return n / v.d;
}

/// Quotient and remainder of n >= 0 by v.d, from one division.
struct QuotRem {
    int64_t q, r;
};
DT_HD QuotRem divide(int64_t n, const Divisor& v) {
    const int64_t q = quotient(n, v);
    return {q, n - q * v.d};
}

/// n mod v.d for n >= 0.
DT_HD int64_t modulo(int64_t n, const Divisor& v) { return divide(n, v).r; }

/// The channel of element i of an (N, C, len) tensor, (i / len) % C: what the per-element
/// kernels of bias and batch-norm need (their launcher makes it, make_channel_of).
struct ChannelOf {
    Divisor len, channels;
    DT_HD int64_t operator()(int64_t i) const { return modulo(quotient(i, len), channels); }
};
constexpr ChannelOf make_channel_of(int64_t len, int64_t channels) {
    return ChannelOf{make_divisor(len), make_divisor(channels)};
}

}  // namespace dt::kernels::common

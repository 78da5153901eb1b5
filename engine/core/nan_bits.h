// SPDX-License-Identifier: MIT
// One value for every NaN in bitwise comparisons and hashes. A NaN's payload depends on the
// hardware that made it: x86 arithmetic gives 0xffc00000, NVIDIA GPUs 0x7fffffff. Both mean
// "not a number", so detrain's hashes (weights_sha256, the audit's trail) and bitwise
// comparisons read every NaN as the quiet NaN 0x7fc00000. Every other value keeps its bits.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace dt {

inline constexpr uint32_t kCanonicalNanBits = 0x7fc00000u;

/// Whether float bits u encode a NaN (all exponent bits set, a nonzero fraction).
inline constexpr bool nan_bits(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

/// u, with any NaN replaced by kCanonicalNanBits.
inline constexpr uint32_t canonical_bits(uint32_t u) { return nan_bits(u) ? kCanonicalNanBits : u; }

/// Whether a and b have the same bits, every NaN counting as one value.
inline bool same_bits(float a, float b) {
    uint32_t ua, ub;
    std::memcpy(&ua, &a, 4);
    std::memcpy(&ub, &b, 4);
    return canonical_bits(ua) == canonical_bits(ub);
}

/// The bytes of n floats as hashes read them: `data` itself when it holds no NaN, else a copy
/// in `scratch` with every NaN made kCanonicalNanBits.
inline const void* canonical_float_bytes(const float* data, std::size_t n,
                                         std::vector<uint32_t>& scratch) {
    std::size_t i = 0;
    for (; i < n; ++i) {
        uint32_t u;
        std::memcpy(&u, data + i, 4);
        if (nan_bits(u)) break;
    }
    if (i == n) return data;
    scratch.resize(n);
    std::memcpy(scratch.data(), data, n * 4);
    for (uint32_t& u : scratch) u = canonical_bits(u);
    return scratch.data();
}

}  // namespace dt

// SPDX-License-Identifier: MIT
// Shapes: a list of extents, row-major (last dimension contiguous). Image tensors are NCHW.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace dt {

using Shape = std::vector<int64_t>;

/// Product of the extents (1 for a scalar shape {}).
inline int64_t shape_numel(const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
}

/// "[2, 3, 4]" for error messages.
inline std::string shape_str(const Shape& s) {
    std::string out = "[";
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i) out += ", ";
        out += std::to_string(s[i]);
    }
    return out + "]";
}

}  // namespace dt

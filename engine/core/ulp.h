// SPDX-License-Identifier: MIT
// The distance of two floats in units in the last place: how many float32 values lie between
// them (+0 and -0 are 0 apart, the distance across zero counts both sides; a NaN against a
// number is infinite, two NaNs 0 apart). Used to report how far two results are (detrain audit,
// engine/noise/site_probe.h).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace dt {

inline double ulp_distance(float a, float b) {
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b) ? 0.0 : std::numeric_limits<double>::infinity();
    auto ordered = [](float x) {  // monotone map of the float line onto the integers
        int32_t i;
        std::memcpy(&i, &x, 4);
        return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);
    };
    return static_cast<double>(std::llabs(ordered(a) - ordered(b)));
}

}  // namespace dt

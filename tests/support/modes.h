// SPDX-License-Identifier: MIT
// Shared scaffolding of the accumulation-mode kernel tests (the tester of tests/kernels/modes/,
// the CUDA bodies' tests, the device ops): the mode list they loop over (also as AccumSpecs), a
// mode's name for traces (the table of kernels/common/accum_mode.h), a result's bits as a set key
// (to count the distinct results of repeated atomic calls), and the total |error| that the
// kahan-beats-tree checks compare.
#pragma once
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/common/accum_mode.h"

namespace dt::test {

/// Every mode; atomic last, the one whose bits may change from call to call.
inline constexpr kernels::common::AccumMode kAllModes[] = {
    kernels::common::AccumMode::kTree, kernels::common::AccumMode::kKahan,
    kernels::common::AccumMode::kExact, kernels::common::AccumMode::kPermuted,
    kernels::common::AccumMode::kAtomic};
/// kAllModes as AccumSpecs: permuted with `permute_key`, the others with 0 (they use no key).
inline constexpr std::array<kernels::common::AccumSpec, 5> all_mode_specs(uint64_t permute_key) {
    std::array<kernels::common::AccumSpec, 5> specs{};
    for (std::size_t i = 0; i < specs.size(); ++i) {
        const kernels::common::AccumMode m = kAllModes[i];
        specs[i] = kernels::common::accum_spec(
            m, m == kernels::common::AccumMode::kPermuted ? permute_key : 0);
    }
    return specs;
}

using kernels::common::accum_mode_name;  // the one table of mode names

/// The bytes of v: equal keys iff equal bits (a std::set of them counts distinct results).
inline std::string bits_of(const std::vector<float>& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

/// Sum over i of |got[i] - want[i]|.
inline double total_error(const std::vector<float>& got, const std::vector<double>& want) {
    double e = 0;
    for (std::size_t i = 0; i < got.size(); ++i) e += std::fabs(got[i] - want[i]);
    return e;
}

}  // namespace dt::test

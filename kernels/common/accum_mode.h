// SPDX-License-Identifier: MIT
// How a reduction site accumulates. Only `tree` exists today; the switchboard (issue 3) adds
// atomic, kahan, exact and permuted. Kernels receive the mode in their Params and must honour it.
#pragma once
#include <cstdint>

namespace dt::kernels::common {

enum class AccumMode : uint8_t {
    kTree = 0,  // leaves summed in index order, combined by reduce_tree.h's fixed pairwise tree
};

}  // namespace dt::kernels::common

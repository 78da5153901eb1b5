// SPDX-License-Identifier: MIT
#include "engine/runtime/exact_pack.h"

namespace dt {

namespace c = kernels::common;

void exact_packed_merge(const PackedExactAcc* in, PackedExactAcc* inout, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        // ORDER: none (integer limbs: 2 units of headroom used, normalised by exact_pack).
        c::ExactAcc a = exact_unpack(inout[i]);
        c::exact_merge(a, exact_unpack(in[i]));
        inout[i] = exact_pack(a);
    }
}

}  // namespace dt

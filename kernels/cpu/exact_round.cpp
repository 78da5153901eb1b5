// SPDX-License-Identifier: MIT
// The rounding of exact accumulators on the CPU (kernels/exact_round.h): each element on its own,
// so spreading them over the threads changes no bit.
#include "kernels/exact_round.h"

#include "kernels/cpu/parallel_for.h"

namespace dt::kernels::cpu {

void exact_round(const common::ExactAcc* accs, int64_t n, float* out) {
    constexpr int64_t kPerThread = 1 << 14;  // below this, threads cost more than they save
    // ORDER: none (integer work, then exact_value's one rounding per element).
    parallel_for(n >= 2 * kPerThread, n, [&](int64_t i) { out[i] = common::exact_value(accs[i]); });
}

}  // namespace dt::kernels::cpu

// SPDX-License-Identifier: MIT
#include "engine/runtime/exact_round.h"

#include "engine/core/backend.h"
#include "engine/core/error.h"

namespace dt {

static_assert(sizeof(kernels::common::ExactAcc) % sizeof(int64_t) == 0);

Tensor round_exact(const Tensor& accs, const Shape& shape) {
    DT_CHECK(accs.defined(), "round_exact: the accumulators are undefined");
    DT_CHECK_T(DTypeError, accs.dtype() == DType::kI64,
               "round_exact: the accumulators must be int64 words, got ", accs.str());
    Tensor out = Tensor::empty(shape, DType::kF32, accs.device());
    DT_CHECK_SHAPE(accs.numel() == out.numel() * kExactAccWords, "round_exact: ", accs.str(),
                   " holds ", accs.numel(), " words, not the ", out.numel() * kExactAccWords,
                   " of ", out.numel(), " accumulators (", kExactAccWords, " words each)");
    device_kernels(accs.device())
        .exact_round(reinterpret_cast<const kernels::common::ExactAcc*>(accs.data<int64_t>()),
                     out.numel(), out.f32());
    return out;
}

}  // namespace dt

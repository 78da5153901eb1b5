// SPDX-License-Identifier: MIT
#include "engine/ops/init.h"

#include <cmath>

#include "engine/core/backend.h"
#include "engine/core/error.h"
#include "engine/ops/dispatch.h"

namespace dt {

void init_uniform_(Tensor& w, uint64_t seed, uint32_t sub, float bound) {
    ops_detail::check_f32(w, "init_uniform_", "weight");
    DT_CHECK_T(ValueError, std::isfinite(bound) && bound >= 0.0f,
               "init_uniform_: the bound must be finite and >= 0, got ", bound, " for ", w.str());
    if (w.numel() == 0) return;
    device_kernels(w.device()).init_uniform(w.f32(), {w.numel(), seed, sub, bound});
}

}  // namespace dt

// SPDX-License-Identifier: MIT
#include "engine/optim/clip.h"

#include <cmath>

#include "engine/core/backend.h"
#include "engine/core/error.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/dispatch.h"
#include "engine/optim/optimizer.h"

namespace dt {

Tensor clip_grad_norm(const std::vector<Tensor>& params, float max_norm) {
    DT_CHECK_VALUE(std::isfinite(max_norm) && max_norm > 0.0f,
                   "clip_grad_norm: max_norm must be a finite value > 0, got ", max_norm);
    const std::vector<Tensor> grads = optim_detail::grads_of(params, "clip_grad_norm");
    std::vector<kernels::GradBuffer> buffers;
    Device device = Device::kCpu;
    for (const Tensor& g : grads) {
        if (!g.defined()) continue;
        DT_CHECK_VALUE(buffers.empty() || g.device() == device,
                       "clip_grad_norm: every gradient must be on one device; found ",
                       device_name(device), " and ", device_name(g.device()));
        device = g.device();
        buffers.push_back({const_cast<float*>(g.f32()), g.numel()});
    }
    if (buffers.empty()) return Tensor();
    Tensor total = Tensor::zeros({1}, DType::kF32, device);
    const kernels::KernelTable& k = device_kernels(device);
    const auto count = static_cast<int64_t>(buffers.size());
    const kernels::GradNormParams p{accum_spec_for_call(ReduceSite::kGradNorm)};
    k.grad_norm_sq_each(buffers.data(), count, total.f32(), p);
    // `detrain audit --error`: the same sum in every mode (engine/noise/site_probe.h).
    ops_detail::probe_rerun(total, ReduceSite::kGradNorm, 1, p,
                            [&](const kernels::GradNormParams& r, float* out) {
                                k.grad_norm_sq_each(buffers.data(), count, out, r);
                            });
    k.grad_clip_each(buffers.data(), count, total.f32(), max_norm);
    return total;
}

}  // namespace dt

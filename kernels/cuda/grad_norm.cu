// SPDX-License-Identifier: MIT
// The global gradient norm and clipping on the GPU (kernels/grad_norm.h): the list of buffers
// and where their leaves start go to scratch slot 1 with the leaves after them; the leaves
// launch, then one thread combines them (the permuted order drawn on the device, slot 0). No
// wait: the total stays in device memory, where the clipping launches read it.
#include <vector>

#include "kernels/cuda/grad_norm_bodies.h"
#include "kernels/cuda/launch.cuh"

namespace dt::kernels::cuda {

namespace {

__global__ void grad_norm_leaves_kernel(GradNormMap m, common::AccumMode mode, GradNormLeaves out) {
    grad_norm_leaves_body(GridPos::here(), m, mode, out);
}
__global__ void grad_norm_combine_kernel(GradNormMap m, common::AccumMode mode, GradNormLeaves in,
                                         const uint32_t* order, float* total) {
    grad_norm_combine_body(m, mode, in, order, total);
}
__global__ void grad_clip_kernel(GradBuffer b, const float* total, float max_norm) {
    grad_clip_body(GridPos::here(), b, total, max_norm);
}

std::size_t aligned(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

void grad_norm_sq_each(const GradBuffer* b, int64_t count, float* total, const GradNormParams& p) {
    std::vector<int64_t> first(static_cast<std::size_t>(count) + 1, 0);
    for (int64_t k = 0; k < count; ++k) first[k + 1] = first[k] + grad_norm_leaves(b[k].n);
    const int64_t leaves = first.back();
    const common::AccumMode mode = p.accum.mode;
    const std::size_t list = aligned(sizeof(GradBuffer) * static_cast<std::size_t>(count + 1));
    const std::size_t starts = aligned(sizeof(int64_t) * first.size());
    const std::size_t per_leaf = mode == common::AccumMode::kKahan   ? sizeof(common::KahanSum)
                                 : mode == common::AccumMode::kExact ? 0
                                                                     : sizeof(float);
    const std::size_t out_bytes = mode == common::AccumMode::kExact
                                      ? sizeof(common::ExactAcc)
                                      : per_leaf * static_cast<std::size_t>(leaves) + 4;
    char* s = static_cast<char*>(scratch(list + starts + aligned(out_bytes), 1));
    if (s == nullptr) return;  // recorded by scratch()
    copy_from_host(s, b, sizeof(GradBuffer) * static_cast<std::size_t>(count));
    copy_from_host(s + list, first.data(), sizeof(int64_t) * first.size());
    const GradNormMap m{reinterpret_cast<const GradBuffer*>(s),
                        reinterpret_cast<const int64_t*>(s + list), count, leaves};
    char* out_at = s + list + starts;
    GradNormLeaves out;
    switch (mode) {
        case common::AccumMode::kExact:
            out.exact = reinterpret_cast<common::ExactAcc*>(out_at);
            device_zero(out.exact, sizeof(common::ExactAcc));  // exact_init's bits
            break;
        case common::AccumMode::kKahan:
            out.kahan = reinterpret_cast<common::KahanSum*>(out_at);
            break;
        case common::AccumMode::kAtomic:
            out.total = total;
            device_zero(total, sizeof(float));
            break;
        default:
            out.sums = reinterpret_cast<float*>(out_at);
    }
    launch_elementwise("grad_norm_leaves", grad_norm_leaves_kernel, leaves, m, mode, out);
    if (mode == common::AccumMode::kAtomic) return;
    const uint32_t* order = permuted_order(p.accum, leaves);
    grad_norm_combine_kernel<<<1, 1, 0, stream()>>>(m, mode, out, order, total);
    check_launch("grad_norm_combine");
}

void grad_clip_each(const GradBuffer* b, int64_t count, const float* total, float max_norm) {
    for (int64_t k = 0; k < count; ++k)
        launch_elementwise("grad_clip", grad_clip_kernel, b[k].n, b[k], total, max_norm);
}

}  // namespace dt::kernels::cuda

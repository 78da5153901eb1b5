// SPDX-License-Identifier: MIT
// dt::dropout: validation, the autograd record and the kernels of kernels/dropout.h through the
// device's kernel table. Saved for backward: the uint8 keep-mask (one byte per element, a tensor
// on x's device) and p; eval mode and p == 0 return x
// itself, so gradients flow straight through.
#include "engine/ops/dropout.h"

#include "engine/autograd/tape.h"
#include "engine/ops/dispatch.h"

namespace dt {

Tensor dropout(const Tensor& x, float p, bool training, const DropoutKey& key) {
    ops_detail::check_f32(x, "dropout", "input");
    DT_CHECK_VALUE(p >= 0.0f && p < 1.0f, "dropout: p must be in [0, 1), got ", p,
                   " (hint: p is the probability of dropping an element)");
    if (!training || p == 0.0f) return x;
    DT_CHECK_SHAPE(x.ndim() >= 1, "dropout: input ", x.str(), " needs a leading batch dimension");
    const int64_t N = x.dim(0);
    const int64_t D = N == 0 ? 0 : x.numel() / N;
    DT_CHECK_SHAPE(static_cast<int64_t>(key.sample_ids.size()) == N, "dropout: key has ",
                   key.sample_ids.size(), " sample ids for a batch of ", N, " (input ", x.str(),
                   "; hint: pass the dataset indices of the batch's samples, in batch order)");
    for (std::size_t n = 0; n < key.sample_ids.size(); ++n) {
        const int64_t id = key.sample_ids[n];
        DT_CHECK_VALUE(id >= 0 && id < (int64_t{1} << 32), "dropout: sample_ids[", n, "] = ", id,
                       " is outside [0, 2^32)");
    }
    DT_CHECK_VALUE(key.epoch < (uint64_t{1} << 16) && key.layer < (1u << 16), "dropout: epoch ",
                   key.epoch, " and layer ", key.layer, " must both be < 65536 (counter layout "
                   "in kernels/dropout.h)");
    DT_CHECK_SHAPE(D < (int64_t{1} << 34), "dropout: ", D, " elements per sample exceed 2^34");

    kernels::DropoutParams kp;
    kp.N = N, kp.D = D, kp.p = p, kp.seed = key.seed;
    kp.sub = kernels::dropout_sub(key.epoch, key.layer);
    Tensor y = ops_detail::empty_like_device(x.shape(), x);
    Tensor mask = Tensor::empty(x.shape(), DType::kU8, x.device());
    const Tensor ids = Tensor::from_vector_i64({N}, key.sample_ids).to(x.device());
    device_kernels(x.device())
        .dropout_forward(x.f32(), ids.data<int64_t>(), y.f32(), mask.data<uint8_t>(), kp);
    if (autograd::needs_grad({x})) {
        autograd::record(y, "dropout", {x}, [mask, kp](const Tensor& dy) {
            Tensor dx = ops_detail::empty_like_device(dy.shape(), dy);
            device_kernels(dy.device())
                .dropout_backward(dy.f32(), mask.data<uint8_t>(), dx.f32(), kp);
            return std::vector<Tensor>{dx};
        });
    }
    return y;
}

}  // namespace dt

// SPDX-License-Identifier: MIT
// dt::dropout: validation, dispatch to kernels/dropout.h and the autograd record. Saved for
// backward: the uint8 keep-mask (one byte per element) and p; eval mode and p == 0 return x
// itself, so gradients flow straight through.
#include "engine/ops/dropout.h"

#include <memory>

#include "engine/autograd/tape.h"
#include "engine/ops/dispatch.h"
#include "kernels/dropout.h"

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
    Tensor y = Tensor::empty(x.shape());
    auto mask = std::make_shared<std::vector<uint8_t>>(static_cast<std::size_t>(x.numel()));
    switch (x.device()) {
        case Device::kCpu:
            kernels::cpu::dropout_forward(x.f32(), key.sample_ids.data(), y.f32(), mask->data(),
                                          kp);
            break;
        case Device::kCuda: ops_detail::no_cuda("dropout");
    }
    if (autograd::needs_grad({x})) {
        autograd::record(y, "dropout", {x}, [mask, kp](const Tensor& dy) {
            Tensor dx = Tensor::empty(dy.shape());
            kernels::cpu::dropout_backward(dy.f32(), mask->data(), dx.f32(), kp);
            return std::vector<Tensor>{dx};
        });
    }
    return y;
}

}  // namespace dt

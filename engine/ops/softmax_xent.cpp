// SPDX-License-Identifier: MIT
// dt::softmax_cross_entropy and dt::argmax_rows: validation (labels are int64 in [0, K), checked
// on the host), the autograd record and the kernels of kernels/softmax_xent.h through the device's
// kernel table (labels go to the logits' device). Saved for backward: logits, labels
// and the per-row max and exp-sum, so the backward recomputes the forward's exponentials.
#include "engine/ops/softmax_xent.h"

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/dispatch.h"
#include "engine/runtime/batch_split.h"

namespace dt {

Tensor softmax_cross_entropy(const Tensor& logits, const Tensor& labels) {
    ops_detail::check_f32(logits, "softmax_cross_entropy", "logits", 2);
    DT_CHECK(labels.defined(), "softmax_cross_entropy: labels are undefined");
    DT_CHECK_T(DTypeError, labels.dtype() == DType::kI64, "softmax_cross_entropy: labels must be "
               "int64, got ", labels.str());
    const int64_t N = logits.dim(0), K = logits.dim(1);
    DT_CHECK_SHAPE(labels.ndim() == 1 && labels.dim(0) == N, "softmax_cross_entropy: labels ",
                   labels.str(), " do not match logits ", logits.str(), " (expected labels [",
                   N, "])");
    DT_CHECK_SHAPE(N > 0 && K > 0, "softmax_cross_entropy: logits ", logits.str(),
                   " must have at least one row and one class");
    const std::vector<int64_t> lab = labels.values<int64_t>();
    for (std::size_t n = 0; n < lab.size(); ++n) {
        DT_CHECK_VALUE(lab[n] >= 0 && lab[n] < K, "softmax_cross_entropy: labels[", n, "] = ",
                       lab[n], " is outside [0, ", K, ") (hint: ", K, " classes in logits ",
                       logits.str(), ")");
    }
    kernels::SoftmaxXentParams p;
    p.N = N, p.K = K, p.accum = accum_spec_for_call(ReduceSite::kLoss);  // one spec per call
    // A part of a split batch: the forward gives the part's undivided total (completed by the
    // split, batch_split.h), the backward divides by the whole batch's size.
    BatchSplit* split = current_batch_split();
    kernels::SoftmaxXentParams back = p;
    if (split != nullptr) p.mean_n = 1, back.mean_n = split->whole();
    const Tensor lab_dev = labels.to(logits.device());
    Tensor loss = ops_detail::empty_like_device({}, logits);
    Tensor rowmax = ops_detail::empty_like_device({N}, logits);
    Tensor rowsum = ops_detail::empty_like_device({N}, logits);
    Tensor loss_rows = ops_detail::empty_like_device({N}, logits);
    device_kernels(logits.device())
        .softmax_xent_forward(logits.f32(), lab_dev.data<int64_t>(), rowmax.f32(), rowsum.f32(),
                              loss_rows.f32(), loss.f32(), p);
    ops_detail::probe_rerun(logits, ReduceSite::kLoss, 1, p,  // the mean loss per mode
                            [&](const kernels::SoftmaxXentParams& r, float* out) {
                                std::vector<float> m(static_cast<std::size_t>(N)), z(m.size()),
                                    rows(m.size());
                                device_kernels(logits.device())
                                    .softmax_xent_forward(logits.f32(), lab_dev.data<int64_t>(),
                                                          m.data(), z.data(), rows.data(), out, r);
                            });
    if (split != nullptr) {  // the split completes the loss on the host
        const float total = loss.item();
        split->add_loss(total, loss_rows.to_vector().data(), N, p.accum);
        // This part's share (not used for bits).
        loss.fill(total / static_cast<float>(split->whole()));
    }
    if (autograd::needs_grad({logits})) {
        autograd::record(loss, "softmax_cross_entropy", {logits},
                         [logits, lab_dev, rowmax, rowsum, back](const Tensor& dloss) {
            Tensor dlogits = ops_detail::empty_like_device(logits.shape(), logits);
            device_kernels(logits.device())
                .softmax_xent_backward(logits.f32(), lab_dev.data<int64_t>(), rowmax.f32(),
                                       rowsum.f32(), dloss.f32(), dlogits.f32(), back);
            return std::vector<Tensor>{dlogits};
        });
    }
    return loss;
}

std::vector<int64_t> argmax_rows(const Tensor& logits) {
    ops_detail::check_f32(logits, "argmax_rows", "logits", 2);
    const int64_t N = logits.dim(0), K = logits.dim(1);
    DT_CHECK_SHAPE(K > 0 || N == 0, "argmax_rows: logits ", logits.str(), " have no columns");
    Tensor out = Tensor::empty({N}, DType::kI64, logits.device());
    device_kernels(logits.device()).argmax_rows(logits.f32(), out.data<int64_t>(), N, K);
    return out.values<int64_t>();
}

}  // namespace dt

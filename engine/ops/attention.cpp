// SPDX-License-Identifier: MIT
// dt::causal_attention: validation, the autograd record and the kernels of kernels/attention.h
// through the device's kernel table. Saved for backward: qkv, the output and the per-row softmax
// max and sum, so that the backward recomputes the forward's probabilities bit for bit.
#include "engine/ops/attention.h"

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/dispatch.h"

namespace dt {

Tensor causal_attention(const Tensor& qkv, int64_t heads) {
    ops_detail::check_f32(qkv, "causal_attention", "qkv", 3);
    const int64_t B = qkv.dim(0), T = qkv.dim(1), C3 = qkv.dim(2);
    DT_CHECK_VALUE(heads > 0, "causal_attention: heads must be positive, got ", heads);
    DT_CHECK_SHAPE(B > 0 && T > 0 && C3 > 0, "causal_attention: qkv ", qkv.str(),
                   " must have a sequence, a token and a channel (B, T, 3C all > 0)");
    DT_CHECK_SHAPE(C3 % (3 * heads) == 0, "causal_attention: qkv's last dimension ", C3,
                   " is not 3 * C with C divisible by ", heads, " heads (qkv ", qkv.str(),
                   "; hint: qkv is (B, T, 3C), C = heads * head size)");
    kernels::AttentionParams p{.B = B, .T = T, .H = heads, .D = C3 / (3 * heads)};
    p.accum = accum_spec_for_call(ReduceSite::kAttnFwd);
    const int64_t C = heads * p.D;
    Tensor out = ops_detail::empty_like_device({B, T, C}, qkv);
    Tensor rowmax = ops_detail::empty_like_device({B, heads, T}, qkv);
    Tensor rowsum = ops_detail::empty_like_device({B, heads, T}, qkv);
    const kernels::KernelTable& k = device_kernels(qkv.device());
    k.attention_forward(qkv.f32(), out.f32(), rowmax.f32(), rowsum.f32(), p);
    ops_detail::probe_rerun(qkv, ReduceSite::kAttnFwd, out.numel(), p,
                            [&](const kernels::AttentionParams& r, float* o) {
                                std::vector<float> m(static_cast<std::size_t>(B * heads * T)),
                                    l(m.size());
                                k.attention_forward(qkv.f32(), o, m.data(), l.data(), r);
                            });
    if (autograd::needs_grad({qkv})) {
        // A view of out without its autograd record: the closure must not own out's node.
        const Tensor saved = out.view(out.shape());
        autograd::record(
            out, "causal_attention", {qkv}, [qkv, saved, rowmax, rowsum, p](const Tensor& dout) {
                kernels::AttentionParams q = p;
                q.accum = accum_spec_for_call(ReduceSite::kAttnGrad);
                const kernels::KernelTable& kt = device_kernels(qkv.device());
                Tensor dqkv = ops_detail::empty_like_device(qkv.shape(), qkv);
                kt.attention_backward(qkv.f32(), saved.f32(), rowmax.f32(), rowsum.f32(),
                                      dout.f32(), dqkv.f32(), q);
                ops_detail::probe_rerun(qkv, ReduceSite::kAttnGrad, dqkv.numel(), p,
                                        [&](const kernels::AttentionParams& r, float* o) {
                                            kt.attention_backward(qkv.f32(), saved.f32(),
                                                                  rowmax.f32(), rowsum.f32(),
                                                                  dout.f32(), o, r);
                                        });
                return std::vector<Tensor>{dqkv};
            });
    }
    return out;
}

}  // namespace dt

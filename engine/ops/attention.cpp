// SPDX-License-Identifier: MIT
// dt::causal_attention: validation, the autograd record and the kernels of kernels/attention.h
// through the device's kernel table. Saved for backward: qkv, the output and the per-row softmax
// max and sum, so that the backward recomputes the forward's probabilities bit for bit.
#include "engine/ops/attention.h"

#include <atomic>

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/ops/dispatch.h"

namespace dt {

namespace {

std::atomic<int64_t> g_rows_computed{0};

}  // namespace

int64_t attention_query_rows_computed() { return g_rows_computed.load(); }

Tensor causal_attention(const Tensor& qkv, int64_t heads) {
    ops_detail::check_f32(qkv, "causal_attention", "qkv", 3);
    return causal_attention_rows(qkv, heads, 0, qkv.dim(1));
}

Tensor causal_attention_rows(const Tensor& qkv, int64_t heads, int64_t q0, int64_t q1) {
    ops_detail::check_f32(qkv, "causal_attention", "qkv", 3);
    const int64_t B = qkv.dim(0), C3 = qkv.dim(2);
    DT_CHECK_VALUE(heads > 0, "causal_attention: heads must be positive, got ", heads);
    DT_CHECK_SHAPE(B > 0 && qkv.dim(1) > 0 && C3 > 0, "causal_attention: qkv ", qkv.str(),
                   " must have a sequence, a token and a channel (B, T, 3C all > 0)");
    DT_CHECK_VALUE(q1 >= 1 && q1 <= qkv.dim(1) && (q1 == qkv.dim(1) || B == 1),
                   "causal_attention: tokens up to ", q1, " of qkv ", qkv.str(),
                   " (hint: at most its T; fewer only for one sequence, a cache buffer)");
    const int64_t T = q1;  // the kernel's T: for one sequence, the buffer's first q1 tokens
    DT_CHECK_SHAPE(C3 % (3 * heads) == 0, "causal_attention: qkv's last dimension ", C3,
                   " is not 3 * C with C divisible by ", heads, " heads (qkv ", qkv.str(),
                   "; hint: qkv is (B, T, 3C), C = heads * head size)");
    DT_CHECK_VALUE(q0 >= 0 && q0 < T, "causal_attention: the first query row ", q0,
                   " is outside the ", T, " tokens used of qkv ", qkv.str());
    const bool whole = q0 == 0 && q1 == qkv.dim(1);
    DT_CHECK_VALUE(whole || !autograd::needs_grad({qkv}), "causal_attention: a KV-cache step ",
                   "(queries ", q0, " .. ", q1, " of ", qkv.dim(1),
                   ") has no gradient (hint: run it under autograd::NoGradGuard)");
    kernels::AttentionParams p{.B = B, .T = T, .H = heads, .D = C3 / (3 * heads), .q0 = q0};
    p.accum = accum_spec_for_call(ReduceSite::kAttnFwd);
    const int64_t C = heads * p.D;
    Tensor out = ops_detail::empty_like_device({B, T - q0, C}, qkv);
    Tensor rowmax = ops_detail::empty_like_device({B, heads, T}, qkv);
    Tensor rowsum = ops_detail::empty_like_device({B, heads, T}, qkv);
    const kernels::KernelTable& k = device_kernels(qkv.device());
    k.attention_forward(qkv.f32(), out.f32(), rowmax.f32(), rowsum.f32(), p);
    g_rows_computed += B * heads * (T - q0);
    ops_detail::probe_rerun(qkv, ReduceSite::kAttnFwd, out.numel(), p,
                            [&](const kernels::AttentionParams& r, float* o) {
                                std::vector<float> m(static_cast<std::size_t>(B * heads * T)),
                                    l(m.size());
                                k.attention_forward(qkv.f32(), o, m.data(), l.data(), r);
                            });
    if (whole && autograd::needs_grad({qkv})) {
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

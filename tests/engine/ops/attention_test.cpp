// SPDX-License-Identifier: MIT
// dt::causal_attention through autograd: forward and the gradient of qkv equal the CPU kernels
// called by hand, bitwise, with each kernel given its own site's mode (attn.fwd forward,
// attn.grad backward); close to the double reference; shape, dtype and head errors that name
// the offending values.
#include "engine/ops/attention.h"

#include <gtest/gtest.h>

#include <vector>

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "kernels/attention.h"
#include "kernels/ref/attention_ref.h"
#include "tests/support/autograd_util.h"
#include "tests/support/compare.h"
#include "tests/support/errors.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

using kernels::common::accum_spec;

TEST(AttentionOp, ForwardAndBackwardAreTheKernelsOfTheirSites) {
    const kernels::AttentionParams p{.B = 2, .T = 40, .H = 3, .D = 5};
    const int64_t C = p.H * p.D;
    const std::vector<float> x =
        test::uniform_floats(p.B * p.T * 3 * C, -2, 2, test::test_seed(), 1);
    const std::vector<float> dy = test::uniform_floats(p.B * p.T * C, -1, 1, test::test_seed(), 2);
    ReduceSiteSpecs specs{};
    specs.fill(accum_spec(AccumMode::kTree));
    specs[static_cast<std::size_t>(ReduceSite::kAttnFwd)] = accum_spec(AccumMode::kExact);
    specs[static_cast<std::size_t>(ReduceSite::kAttnGrad)] = accum_spec(AccumMode::kKahan);
    const ScopedReduceConfig modes(specs);
    Tensor qkv = Tensor::from_vector({p.B, p.T, 3 * C}, x);
    qkv.set_requires_grad(true);
    const Tensor y = causal_attention(qkv, p.H);
    EXPECT_EQ(y.shape(), (Shape{p.B, p.T, C}));
    test::weighted_sum(y, dy).backward();

    kernels::AttentionParams f = p, g = p;
    f.accum = accum_spec(AccumMode::kExact), g.accum = accum_spec(AccumMode::kKahan);
    std::vector<float> out(dy.size()), m(static_cast<std::size_t>(p.B * p.H * p.T)), l(m.size()),
        dx(x.size());
    kernels::cpu::attention_forward(x.data(), out.data(), m.data(), l.data(), f);
    kernels::cpu::attention_backward(x.data(), out.data(), m.data(), l.data(), dy.data(), dx.data(),
                                     g);
    EXPECT_TRUE(test::bitwise_equal(y.to_vector(), out));
    EXPECT_TRUE(test::bitwise_equal(qkv.grad().to_vector(), dx));
    EXPECT_EQ(reduce_call_count(ReduceSite::kAttnFwd), 1u);
    EXPECT_EQ(reduce_call_count(ReduceSite::kAttnGrad), 1u);

    const std::vector<double> xd = test::to_double(x), gd = test::to_double(dy);
    std::vector<double> want(out.size()), wm(m.size()), wl(m.size()), wdx(x.size());
    kernels::ref::attention_forward(xd.data(), want.data(), wm.data(), wl.data(), p);
    kernels::ref::attention_backward(xd.data(), gd.data(), wdx.data(), p);
    EXPECT_TRUE(test::within_rel_of_max(out.data(), want, 1e-5));
    EXPECT_TRUE(test::within_rel_of_max(dx.data(), wdx, 1e-5));
}

TEST(AttentionOp, BadShapesAndHeadsThrowNamingThem) {
    const Tensor qkv = Tensor::zeros({2, 4, 18});
    EXPECT_TRUE(test::has(test::message_of<ShapeError>([&] { causal_attention(qkv, 4); }),
                          "is not 3 * C with C divisible by 4 heads"));
    EXPECT_TRUE(test::has(test::message_of<ValueError>([&] { causal_attention(qkv, 0); }),
                          "heads must be positive, got 0"));
    EXPECT_THROW(causal_attention(Tensor::zeros({8, 18}), 2), ShapeError);
    EXPECT_THROW(causal_attention(Tensor::zeros({2, 0, 18}), 2), ShapeError);
    EXPECT_THROW(causal_attention(Tensor::zeros({2, 4, 0}), 2), ShapeError);
    EXPECT_THROW(causal_attention(Tensor::zeros({2, 4, 18}, DType::kI64), 2), DTypeError);
    EXPECT_EQ(causal_attention(qkv, 3).shape(), (Shape{2, 4, 6}));  // D = 2
}

}  // namespace
}  // namespace dt

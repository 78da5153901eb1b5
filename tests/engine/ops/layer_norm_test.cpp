// SPDX-License-Identifier: MIT
// dt::layer_norm through autograd: forward and backward against the double reference (within
// 1e-5 of the largest reference magnitude), (M, C) and (B, T, C) inputs giving the same bits,
// the sites' specs taken once per call (ln.stats in the forward, ln.grad in the backward: a
// permuted run's keys are those of the calls' counters), micro-batches in the exact mode giving
// the whole batch's dgamma and dbeta bits (and dx's), and bad-input errors.
#include "engine/ops/layer_norm.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/runtime/batch_split.h"
#include "engine/runtime/collective.h"
#include "kernels/common/accum_permuted.h"
#include "kernels/ref/layer_norm_ref.h"
#include "tests/support/autograd_util.h"
#include "tests/support/compare.h"
#include "tests/support/errors.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

using test::backward_of;
using VecD = std::vector<double>;

struct Fixture {
    Tensor x, gamma, beta, dy;
};

/// x (B, T, C) with a per-token offset, gamma around 1, dy uniform.
Fixture make(int64_t B, int64_t T, int64_t C) {
    const uint64_t s = test::test_seed();
    std::vector<float> xv = test::uniform_floats(B * T * C, -2, 2, s, 1);
    for (std::size_t k = 0; k < xv.size(); ++k) xv[k] += 0.5f * static_cast<float>(k / C % 3);
    Fixture f{Tensor::from_vector({B, T, C}, xv),
              Tensor::from_vector({C}, test::uniform_floats(C, 0.5f, 1.5f, s, 2)),
              Tensor::from_vector({C}, test::uniform_floats(C, -1, 1, s, 3)),
              Tensor::from_vector({B, T, C}, test::uniform_floats(B * T * C, -1, 1, s, 4))};
    f.x.set_requires_grad(true);
    f.gamma.set_requires_grad(true);
    f.beta.set_requires_grad(true);
    return f;
}

VecD d(const Tensor& t) { return test::to_double(t.to_vector()); }

::testing::AssertionResult close_to(const Tensor& got, const VecD& want) {
    return test::within_rel_of_max(got.f32(), want, 1e-5);
}

TEST(LayerNormOp, ForwardAndBackwardMatchTheDoubleReference) {
    const int64_t B = 2, T = 3, C = 37;
    const Fixture f = make(B, T, C);
    const kernels::LayerNormParams p{.M = B * T, .C = C, .T = T};
    const VecD x = d(f.x), g = d(f.gamma), b = d(f.beta), dy = d(f.dy);
    VecD y(x.size()), mean(B * T), rstd(B * T), dx(x.size()), dg(C), db(C);
    kernels::ref::layer_norm_forward(x.data(), g.data(), b.data(), y.data(), mean.data(),
                                     rstd.data(), p);
    kernels::ref::layer_norm_backward(dy.data(), x.data(), mean.data(), rstd.data(), g.data(),
                                      dx.data(), dg.data(), db.data(), p);
    const Tensor out = layer_norm(f.x, f.gamma, f.beta, T);
    EXPECT_EQ(out.shape(), f.x.shape());
    EXPECT_TRUE(out.requires_grad());
    EXPECT_TRUE(close_to(out, y));
    const std::vector<Tensor> grads = backward_of(out, f.dy);
    ASSERT_EQ(grads.size(), 3u);
    EXPECT_EQ(grads[0].shape(), f.x.shape());
    EXPECT_TRUE(close_to(grads[0], dx));
    EXPECT_TRUE(close_to(grads[1], dg));
    EXPECT_TRUE(close_to(grads[2], db));
}

TEST(LayerNormOp, TokensAsRowsGiveTheSameBits) {
    const Fixture f = make(3, 4, 20);
    Tensor x2 = Tensor::from_vector({12, 20}, f.x.to_vector());
    x2.set_requires_grad(true);
    const Tensor y3 = layer_norm(f.x, f.gamma, f.beta, 4);
    const Tensor y2 = layer_norm(x2, f.gamma, f.beta, 4);
    EXPECT_TRUE(test::bitwise_equal(y2.to_vector(), y3.to_vector()));
    const std::vector<Tensor> g3 = backward_of(y3, f.dy);
    const std::vector<Tensor> g2 = backward_of(y2, Tensor::from_vector({12, 20}, f.dy.to_vector()));
    for (int i = 0; i < 3; ++i)
        EXPECT_TRUE(test::bitwise_equal(g2[i].to_vector(), g3[i].to_vector())) << i;
}

// Every site permuted with one run seed: the forward's row sums take ln.stats's key of call 0,
// the backward's sums ln.grad's key of call 0 (reduce_sites.h), so the op's bits are the CPU
// kernels' with those keys.
TEST(LayerNormOp, TheSitesSpecsAreTakenPerCall) {
    const int64_t B = 3, T = 2, C = 70;
    const Fixture f = make(B, T, C);
    const uint64_t seed = 99;
    const ScopedReduceConfig config(kernels::common::accum_spec(AccumMode::kPermuted, seed));
    const Tensor y = layer_norm(f.x, f.gamma, f.beta, T);
    const std::vector<Tensor> grads = backward_of(y, f.dy);
    EXPECT_EQ(reduce_call_count(ReduceSite::kLnStats), 1u);
    EXPECT_EQ(reduce_call_count(ReduceSite::kLnGrad), 1u);
    namespace c = kernels::common;
    kernels::LayerNormParams p{.M = B * T, .C = C, .T = T};
    p.accum = c::accum_spec(AccumMode::kPermuted,
                            c::permute_key(seed, static_cast<uint32_t>(ReduceSite::kLnStats), 0));
    const std::vector<float> x = f.x.to_vector(), g = f.gamma.to_vector(), b = f.beta.to_vector(),
                             dy = f.dy.to_vector();
    std::vector<float> wy(x.size()), mean(B * T), rstd(B * T), dx(x.size()), dg(C), db(C);
    kernels::cpu::layer_norm_forward(x.data(), g.data(), b.data(), wy.data(), mean.data(),
                                     rstd.data(), p);
    p.accum.permute_key = c::permute_key(seed, static_cast<uint32_t>(ReduceSite::kLnGrad), 0);
    kernels::cpu::layer_norm_backward(dy.data(), x.data(), mean.data(), rstd.data(), g.data(),
                                      dx.data(), dg.data(), db.data(), p);
    EXPECT_TRUE(test::bitwise_equal(y.to_vector(), wy));
    EXPECT_TRUE(test::bitwise_equal(grads[0].to_vector(), dx));
    EXPECT_TRUE(test::bitwise_equal(grads[1].to_vector(), dg));
    EXPECT_TRUE(test::bitwise_equal(grads[2].to_vector(), db));
}

/// Elements [b0 * row, b1 * row) of v: sequences b0 .. b1 - 1 of rows of `row` floats.
std::vector<float> sequences(const std::vector<float>& v, int64_t b0, int64_t b1, int64_t row) {
    return std::vector<float>(v.begin() + b0 * row, v.begin() + b1 * row);
}

TEST(LayerNormOp, MicroBatchesGiveTheWholeBatchsExactGradient) {
    // ln.grad exact through a split batch (engine/runtime/batch_split.h): three micro-batches'
    // unrounded sums in gamma's and beta's accumulators, rounded once at finish: the whole
    // batch's bits. dx is per token: each part's rows are the whole batch's.
    const int64_t B = 7, T = 16, C = 45, row = T * C;
    const ScopedReduceConfig exact(kernels::common::accum_spec(AccumMode::kExact));
    const Fixture f = make(B, T, C);
    const Tensor y = layer_norm(f.x, f.gamma, f.beta, T);
    const std::vector<Tensor> whole = backward_of(y, f.dy);
    const std::vector<float> xv = f.x.to_vector(), dyv = f.dy.to_vector();
    Tensor gamma = f.gamma.clone(), beta = f.beta.clone();
    gamma.set_requires_grad(true);
    beta.set_requires_grad(true);
    BatchSplit split({gamma, beta}, world(), false);
    split.begin_step(B);
    std::vector<float> dx;
    for (const auto& [b0, b1] : {std::pair<int64_t, int64_t>{0, 1}, {1, 4}, {4, B}}) {
        split.begin_micro(b1 - b0);
        const ScopedBatchSplit scoped(split);
        Tensor x = Tensor::from_vector({b1 - b0, T, C}, sequences(xv, b0, b1, row));
        x.set_requires_grad(true);
        test::weighted_sum(layer_norm(x, gamma, beta, T), sequences(dyv, b0, b1, row)).backward();
        EXPECT_FALSE(gamma.grad().defined()) << "the part's dgamma went to a float gradient";
        EXPECT_FALSE(beta.grad().defined()) << "the part's dbeta went to a float gradient";
        const std::vector<float> part = x.grad().to_vector();
        dx.insert(dx.end(), part.begin(), part.end());
    }
    split.finish(kernels::common::accum_spec(AccumMode::kExact));
    EXPECT_TRUE(test::bitwise_equal(dx, whole[0].to_vector()));
    EXPECT_TRUE(test::bitwise_equal(gamma.grad().to_vector(), whole[1].to_vector()));
    EXPECT_TRUE(test::bitwise_equal(beta.grad().to_vector(), whole[2].to_vector()));
}

TEST(LayerNormOp, WithoutGradNothingIsRecorded) {
    const Fixture f = make(1, 2, 5);
    autograd::NoGradGuard guard;
    EXPECT_FALSE(layer_norm(f.x, f.gamma, f.beta, 2).requires_grad());
}

TEST(LayerNormOp, BadInputsThrowWithWhatIsWrong) {
    const Fixture f = make(2, 3, 4);
    const Tensor g5 = Tensor::full({5}, 1.0f);
    EXPECT_TRUE(test::has(test::message_of<ShapeError>([&] { layer_norm(f.x, g5, f.beta, 3); }),
                          "gamma has 5 entries but x"));
    EXPECT_TRUE(test::has(test::message_of<ShapeError>([&] { layer_norm(f.x, f.gamma, g5, 3); }),
                          "beta has 5 entries"));
    EXPECT_TRUE(
        test::has(test::message_of<ShapeError>([&] { layer_norm(f.x, f.gamma, f.beta, 2); }),
                  "sequences of 3 tokens but seq_len is 2"));
    const Tensor x2 = Tensor::full({6, 4}, 1.0f);
    EXPECT_TRUE(test::has(test::message_of<ShapeError>([&] { layer_norm(x2, f.gamma, f.beta, 4); }),
                          "not a whole number of sequences"));
    EXPECT_NO_THROW(layer_norm(x2, f.gamma, f.beta, 2));
    EXPECT_THROW(layer_norm(x2, f.gamma, f.beta, 0), ValueError);
    EXPECT_THROW(layer_norm(Tensor::full({24}, 1.0f), f.gamma, f.beta, 1), ShapeError);
    EXPECT_THROW(
        layer_norm(Tensor::full({2, 0}, 1.0f), Tensor::full({0}, 1.0f), Tensor::full({0}, 1.0f), 1),
        ShapeError);
    EXPECT_THROW(layer_norm(Tensor::zeros({6, 4}, DType::kI64), f.gamma, f.beta, 2), DTypeError);
    EXPECT_THROW(layer_norm(x2, f.gamma, f.beta, 2, -1.0f), ValueError);
    autograd::clear_tape();
}

}  // namespace
}  // namespace dt

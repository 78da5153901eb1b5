// SPDX-License-Identifier: MIT
// The tape's documented behaviour (engine/autograd/tape.h): a tensor used several times receives
// its contributions in reverse sequence order of the consumers, the first stored as is and later
// ones added as acc + g; leaves keep accumulating across backward() calls; NoGradGuard records
// nothing; backward() from a tensor with more than one element throws; the leaf-final hook names
// each leaf once its gradient for the pass is complete.
#include "engine/autograd/tape.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/ops/add.h"
#include "engine/ops/relu.h"
#include "engine/ops/softmax_xent.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

Tensor leaf(const Shape& shape, const std::vector<float>& v) {
    Tensor t = Tensor::from_vector(shape, v);
    t.set_requires_grad(true);
    return t;
}

TEST(Tape, SameTensorTwiceInOneOp) {
    Tensor x = leaf({1}, {3.0f});
    add(x, x).backward();
    EXPECT_EQ(x.grad().item(), 2.0f);  // dy, then dy + dy
}

// loss(add(relu(x), x)): add (node 1) runs first and gives x its first contribution G; relu
// (node 0) adds relu'(x) * G second, so x.grad = G + (x > 0 ? G : 0), G on the left.
TEST(Tape, TwoConsumersAccumulateInReverseSequenceOrder) {
    const std::vector<float> xv = test::uniform_floats(12, -2, 2, test::test_seed());
    const Tensor labels = Tensor::from_vector_i64({3}, {1, 3, 0});
    Tensor x = leaf({3, 4}, xv);
    autograd::clear_tape();
    Tensor z = add(relu(x), x);
    EXPECT_EQ(autograd::tape_size(), 2u);
    softmax_cross_entropy(z, labels).backward();
    EXPECT_EQ(autograd::tape_size(), 0u);  // backward clears the tape
    // G: the loss gradient at z's value.
    Tensor zl = leaf({3, 4}, z.to_vector());
    softmax_cross_entropy(zl, labels).backward();
    const std::vector<float> g = zl.grad().to_vector();
    std::vector<float> want;
    for (std::size_t i = 0; i < xv.size(); ++i) want.push_back(g[i] + (xv[i] > 0 ? g[i] : 0.0f));
    EXPECT_TRUE(test::bitwise_equal(x.grad().to_vector(), want));
}

TEST(Tape, LeavesAccumulateAcrossBackwardCallsUntilZeroGrad) {
    Tensor x = leaf({1}, {0.5f});
    relu(x).backward();
    relu(x).backward();
    EXPECT_EQ(x.grad().item(), 2.0f);
    x.zero_grad();
    EXPECT_FALSE(x.grad().defined());
    relu(x).backward();
    EXPECT_EQ(x.grad().item(), 1.0f);
}

TEST(Tape, NoGradGuardRecordsNothingAndNests) {
    Tensor x = leaf({2}, {1.0f, -1.0f});
    autograd::clear_tape();
    {
        autograd::NoGradGuard outer;
        {
            autograd::NoGradGuard inner;
            EXPECT_FALSE(add(x, x).requires_grad());
        }
        EXPECT_FALSE(autograd::grad_enabled());
        EXPECT_FALSE(relu(x).requires_grad());
    }
    EXPECT_TRUE(autograd::grad_enabled());
    EXPECT_EQ(autograd::tape_size(), 0u);
    EXPECT_THROW(relu(Tensor::from_vector({1}, {1.0f})).backward(),
                 Error);  // nothing requires grad
}

TEST(Tape, BackwardFromNonScalarThrows) {
    Tensor x = leaf({3}, {1.0f, 2.0f, 3.0f});
    Tensor y = relu(x);
    EXPECT_THROW(y.backward(), Error);
    autograd::clear_tape();
}

TEST(Tape, BackwardFromAnOutputWithItsGradient) {
    // relu's backward gets the given gradient: dx = dy where x > 0, else 0.
    Tensor x = leaf({3}, {1.0f, -2.0f, 3.0f});
    autograd::backward(relu(x), Tensor::from_vector({3}, {0.5f, 7.0f, -4.0f}));
    EXPECT_EQ(x.grad().to_vector(), (std::vector<float>{0.5f, 0.0f, -4.0f}));
    Tensor z = leaf({2}, {1.0f, 2.0f});
    EXPECT_THROW(autograd::backward(relu(z), Tensor::zeros({3})), Error);  // another shape
    autograd::clear_tape();
}

// The hook names each leaf right after the node that took it first (creation order): w after
// the last add, x after relu (its second consumer in the pass), v after its node although that
// node is off the loss's path; u, never used, is not named. What a leaf's .grad holds when it is
// named is what it holds at the end.
TEST(Tape, TheLeafFinalHookNamesEachLeafOnceItsGradientIsFinal) {
    const std::vector<float> xv = test::uniform_floats(12, -2, 2, test::test_seed());
    const Tensor labels = Tensor::from_vector_i64({3}, {1, 3, 0});
    Tensor x = leaf({3, 4}, xv), w = leaf({3, 4}, xv), v = leaf({2}, {1.0f, -1.0f});
    Tensor u = leaf({1}, {2.0f});
    autograd::clear_tape();
    const Tensor off_path = relu(v);
    const Tensor loss = softmax_cross_entropy(add(add(relu(x), x), w), labels);
    std::vector<const TensorImpl*> named;
    std::vector<std::vector<float>> seen;
    {
        const autograd::LeafFinalHook hook([&](const Tensor& leaf_tensor) {
            named.push_back(leaf_tensor.impl_ptr().get());
            seen.push_back(leaf_tensor.grad().defined() ? leaf_tensor.grad().to_vector()
                                                        : std::vector<float>());
        });
        loss.backward();
    }
    ASSERT_EQ(named, (std::vector<const TensorImpl*>{w.impl_ptr().get(), x.impl_ptr().get(),
                                                     v.impl_ptr().get()}));
    EXPECT_TRUE(test::bitwise_equal(seen[0], w.grad().to_vector()));
    EXPECT_TRUE(test::bitwise_equal(seen[1], x.grad().to_vector()));
    EXPECT_TRUE(seen[2].empty());
    EXPECT_FALSE(u.grad().defined());
    // Gone with its scope: the next pass calls nothing.
    relu(u).backward();
    EXPECT_EQ(named.size(), 3u);
}

/// out = node `name` of `inputs` (values: zeros of `shape`); its backward returns `grads`.
Tensor op(const std::string& name, const std::vector<Tensor>& inputs, const Shape& shape,
          std::vector<Tensor> grads, bool* ran = nullptr) {
    Tensor out = Tensor::zeros(shape);
    autograd::record(out, name, inputs, [grads, ran](const Tensor&) {
        if (ran != nullptr) *ran = true;
        return grads;
    });
    return out;
}

TEST(Tape, TheFiniteCheckReportsTheFirstNonFiniteGradientOfThePass) {
    // loss = second(h), h = first(x): second's backward runs first and returns -inf for h; then
    // first's returns a NaN for x. The pass completes (the answers come back at its end) and the
    // report is second's, as a check that stopped there would have given.
    const float inf = std::numeric_limits<float>::infinity();
    Tensor x = leaf({2}, {1.0f, 2.0f});
    bool first_ran = false;
    Tensor h = op("first", {x}, {3}, {Tensor::from_vector({2}, {std::nanf(""), 0.0f})}, &first_ran);
    Tensor loss = op("second", {h}, {1}, {Tensor::from_vector({3}, {0.0f, -inf, 1.0f})});
    autograd::set_check_finite(true);
    try {
        loss.backward();
        ADD_FAILURE() << "no NonFiniteGradient";
    } catch (const autograd::NonFiniteGradient& e) {
        EXPECT_EQ(e.op, "second");
        EXPECT_EQ(e.input, 0u);
        EXPECT_EQ(e.element, 1);
        EXPECT_EQ(e.value, -inf);
        EXPECT_FALSE(e.tensor.defined());  // an intermediate: not kept
        EXPECT_NE(std::string(e.what()).find("the backward of second returned -inf at element 1 "
                                             "of the gradient for its input 0 (float32[3] cpu)"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_TRUE(first_ran);
    EXPECT_EQ(autograd::tape_size(), 0u);
    autograd::set_check_finite(false);
}

TEST(Tape, TheFiniteCheckCatchesASumOfFiniteContributions) {
    // Two finite contributions to one leaf overflow when added: the sum is reported, with the
    // leaf and the NaN/Inf class of the value.
    Tensor x = leaf({2}, {1.0f, 2.0f});
    const Tensor big = Tensor::from_vector({2}, {3e38f, 1.0f});
    Tensor a = op("a", {x}, {1}, {big});
    Tensor b = op("b", {x}, {1}, {big});
    Tensor loss = op("join", {a, b}, {1},
                     {Tensor::from_vector({1}, {1.0f}), Tensor::from_vector({1}, {1.0f})});
    autograd::set_check_finite(true);
    try {
        loss.backward();
        ADD_FAILURE() << "no NonFiniteGradient";
    } catch (const autograd::NonFiniteGradient& e) {
        EXPECT_EQ(e.element, 0);
        EXPECT_EQ(e.value, std::numeric_limits<float>::infinity());
        EXPECT_TRUE(e.tensor.same(x));
        EXPECT_NE(std::string(e.what()).find("to earlier contributions gave inf at element 0"),
                  std::string::npos)
            << e.what();
    }
    autograd::set_check_finite(false);
    x.zero_grad();
}

}  // namespace
}  // namespace dt

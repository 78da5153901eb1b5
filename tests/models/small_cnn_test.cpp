// SPDX-License-Identifier: MIT
// SmallCNN / SmallCNN-BN: parameter names, shapes and counts, output shapes for 28x28x1 and
// 32x32x3, config validation, dropout keying, batch-norm running statistics, and that the loss
// falls over 30 plain SGD steps on a tiny fixed batch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/ops/softmax_xent.h"
#include "models/model.h"
#include "tests/support/compare.h"
#include "tests/support/models.h"

namespace dt {
namespace {

using test::model_config, test::random_images;

std::vector<std::string> names(const Model& m) {
    std::vector<std::string> out;
    for (const NamedParam& p : m.params()) out.push_back(p.name);
    return out;
}

TEST(SmallCNN, ParamNamesShapesAndCount28x28) {
    auto m = make_model(model_config("smallcnn", 1, 28, 28));
    EXPECT_EQ(m->name(), "smallcnn");
    EXPECT_EQ(names(*m),
              (std::vector<std::string>{"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias",
                                        "conv3.weight", "conv3.bias", "fc1.weight", "fc1.bias",
                                        "fc2.weight", "fc2.bias"}));
    const std::vector<Shape> shapes = {{16, 1, 3, 3},  {16}, {32, 16, 3, 3}, {32},
                                       {32, 32, 3, 3}, {32}, {32, 288},      {32},
                                       {10, 32},       {10}};
    for (std::size_t i = 0; i < shapes.size(); ++i) {
        EXPECT_EQ(m->params()[i].tensor.shape(), shapes[i]) << m->params()[i].name;
        EXPECT_TRUE(m->params()[i].trainable);
    }
    // conv1 160 + conv2 4640 + conv3 9248 + fc1 9248 + fc2 330
    EXPECT_EQ(m->num_trainable(), 160 + 4640 + 9248 + 9248 + 330);
    EXPECT_EQ(m->num_trainable(), 23626);
    EXPECT_EQ(m->trainable().size(), 10u);
}

TEST(SmallCNN, ParamCount32x32x3) {
    auto m = make_model(model_config("smallcnn", 3, 32, 32));
    EXPECT_EQ(m->params()[6].tensor.shape(), (Shape{32, 512}));  // flatten 32*4*4
    EXPECT_EQ(m->num_trainable(), 448 + 4640 + 9248 + 16416 + 330);
}

TEST(SmallCNNBn, BatchNormParamsAndNoConvBias) {
    auto m = make_model(model_config("smallcnn-bn", 1, 28, 28));
    EXPECT_EQ(m->name(), "smallcnn-bn");
    const std::vector<std::string> want = {
        "conv1.weight", "bn1.weight", "bn1.bias",   "bn1.running_mean", "bn1.running_var",
        "conv2.weight", "bn2.weight", "bn2.bias",   "bn2.running_mean", "bn2.running_var",
        "conv3.weight", "bn3.weight", "bn3.bias",   "bn3.running_mean", "bn3.running_var",
        "fc1.weight",   "fc1.bias",   "fc2.weight", "fc2.bias"};
    EXPECT_EQ(names(*m), want);
    for (const NamedParam& p : m->params()) {
        const bool buffer = p.name.find("running") != std::string::npos;
        EXPECT_EQ(p.trainable, !buffer) << p.name;
        EXPECT_EQ(p.tensor.requires_grad(), !buffer) << p.name;
    }
    EXPECT_EQ(m->num_trainable(), (144 + 32) + (4608 + 64) + (9216 + 64) + 9248 + 330);
}

TEST(SmallCNN, OutputShapes) {
    for (const char* name : {"smallcnn", "smallcnn-bn"}) {
        for (auto [c, h, w] :
             {std::tuple{1, 28, 28}, std::tuple{3, 32, 32}, std::tuple{2, 9, 13}}) {
            SCOPED_TRACE(str(name, " ", c, "x", h, "x", w));
            auto m = make_model(model_config(name, c, h, w, 7));
            m->init(InitScheme::kGlorotUniform, 1);
            ForwardContext ctx;
            Tensor y = m->forward(random_images(3, c, h, w, 7, 1), ctx);
            EXPECT_EQ(y.shape(), (Shape{3, 7}));
            ctx.training = false;
            EXPECT_EQ(m->forward(random_images(1, c, h, w, 7, 2), ctx).shape(), (Shape{1, 7}));
            autograd::clear_tape();
        }
    }
}

TEST(SmallCNN, RejectsBadConfigsAndInputs) {
    EXPECT_THROW(make_model(model_config("smallcnn", 1, 7, 28)), ValueError);
    EXPECT_THROW(make_model(model_config("smallcnn", 0, 28, 28)), ValueError);
    EXPECT_THROW(make_model(model_config("smallcnn", 1, 28, 28, 0)), ValueError);
    ModelConfig cfg = model_config("smallcnn", 1, 28, 28);
    cfg.dropout = 1.0f;
    EXPECT_THROW(make_model(cfg), ValueError);
    try {
        make_model(model_config("lenet", 1, 28, 28));
        FAIL() << "expected ValueError";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("smallcnn, smallcnn-bn, mediumcnn, resnet18"),
                  std::string::npos)
            << e.what();
    }
    auto m = make_model(model_config("smallcnn", 1, 28, 28));
    EXPECT_THROW(m->forward(random_images(2, 3, 28, 28, 7, 0), ForwardContext{}), ShapeError);
    EXPECT_THROW(m->forward(random_images(2, 1, 32, 32, 7, 0), ForwardContext{}), ShapeError);
}

TEST(SmallCNN, DropoutIsKeyedAndOffInEval) {
    ModelConfig cfg = model_config("smallcnn", 1, 28, 28);
    cfg.dropout = 0.5f;
    auto drop = make_model(cfg);
    auto plain = make_model(model_config("smallcnn", 1, 28, 28));
    drop->init(InitScheme::kGlorotUniform, 3);
    plain->init(InitScheme::kGlorotUniform, 3);
    const Tensor x = random_images(4, 1, 28, 28, 7, 3);
    autograd::NoGradGuard no_grad;
    ForwardContext ctx;
    ctx.dropout_seed = 11;
    ctx.sample_ids = {5, 6, 7, 8};
    const Tensor a = drop->forward(x, ctx), b = drop->forward(x, ctx);
    EXPECT_TRUE(test::bitwise_equal(a.to_vector(), b.to_vector()));
    const Tensor full = plain->forward(x, ctx);
    EXPECT_FALSE(test::bitwise_equal(a.to_vector(), full.to_vector()));
    ctx.epoch = 1;  // a new epoch draws a new mask
    EXPECT_FALSE(test::bitwise_equal(a.to_vector(), drop->forward(x, ctx).to_vector()));
    ctx.training = false;
    EXPECT_TRUE(
        test::bitwise_equal(drop->forward(x, ctx).to_vector(), plain->forward(x, ctx).to_vector()));
    ctx.training = true;
    ctx.sample_ids = {1, 2};
    EXPECT_THROW(drop->forward(x, ctx), ValueError);
}

TEST(SmallCNNBn, RunningStatsUpdateInPlaceOnlyInTraining) {
    auto m = make_model(model_config("smallcnn-bn", 1, 28, 28));
    m->init(InitScheme::kGlorotUniform, 5);
    const Tensor x = random_images(4, 1, 28, 28, 7, 4);
    const NamedParam& mean = m->params()[3];
    ASSERT_EQ(mean.name, "bn1.running_mean");
    const std::vector<float> before = mean.tensor.to_vector();
    ForwardContext ctx;
    ctx.training = false;
    {
        autograd::NoGradGuard no_grad;
        m->forward(x, ctx);
    }
    EXPECT_TRUE(test::bitwise_equal(before, mean.tensor.to_vector()));
    ctx.training = true;
    m->forward(x, ctx);
    autograd::clear_tape();
    EXPECT_FALSE(test::bitwise_equal(before, mean.tensor.to_vector()))
        << "batchnorm2d must update the model's running_mean in place";
}

/// Mean cross-entropy on the batch after each of `steps` plain SGD steps (first: before any).
std::vector<float> sgd_losses(Model& m, const Tensor& x, const Tensor& labels, int steps,
                              float lr) {
    std::vector<float> losses;
    ForwardContext ctx;
    ctx.sample_ids = {0, 1, 2, 3, 4, 5, 6, 7};
    for (int s = 0; s <= steps; ++s) {
        Tensor loss = softmax_cross_entropy(m.forward(x, ctx), labels);
        losses.push_back(loss.item());
        if (s == steps) break;
        loss.backward();
        autograd::NoGradGuard no_grad;
        for (Tensor t : m.trainable()) {
            Tensor g = t.grad();
            if (!g.defined()) continue;
            float* w = t.f32();
            const float* gv = g.f32();
            for (int64_t i = 0; i < t.numel(); ++i) w[i] -= lr * gv[i];
            t.zero_grad();
        }
    }
    autograd::clear_tape();
    return losses;
}

TEST(SmallCNN, LossFallsOverThirtySgdSteps) {
    for (const char* name : {"smallcnn", "smallcnn-bn"}) {
        SCOPED_TRACE(name);
        auto m = make_model(model_config(name, 1, 16, 16));  // small input keeps the test fast
        m->init(InitScheme::kHeUniform, 42);
        const Tensor x = random_images(8, 1, 16, 16, 7, 9);
        const Tensor labels = Tensor::from_vector_i64({8}, {0, 1, 2, 3, 4, 5, 6, 7});
        const std::vector<float> losses = sgd_losses(*m, x, labels, 30, 0.05f);
        for (float l : losses) ASSERT_TRUE(std::isfinite(l));
        EXPECT_LT(losses.back(), 0.5f * losses.front())
            << "first " << losses.front() << " last " << losses.back();
        std::printf("%s: loss %.4f -> %.4f after 30 SGD steps\n", name, losses.front(),
                    losses.back());
    }
}

}  // namespace
}  // namespace dt

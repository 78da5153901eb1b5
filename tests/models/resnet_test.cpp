// SPDX-License-Identifier: MIT
// ResNet-18 (CIFAR variant): the PyTorch parameter count 11,173,962 for 10 classes, the
// kuangliu/pytorch-cifar names (projection shortcuts only where the shape changes), output
// shapes, and a forward + backward pass on a tiny batch reaching every parameter.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "engine/autograd/tape.h"
#include "models/model.h"
#include "tests/support/models.h"

namespace dt {
namespace {

ModelConfig resnet(int c, int h, int w, int classes = 10) {
    return test::model_config("resnet18", c, h, w, classes);
}

const NamedParam* find(const Model& m, const std::string& name) {
    for (const NamedParam& p : m.params()) {
        if (p.name == name) return &p;
    }
    return nullptr;
}

TEST(ResNet18, ParamCountMatchesPyTorch) {
    auto m = make_model(resnet(3, 32, 32));
    EXPECT_EQ(m->name(), "resnet18");
    EXPECT_EQ(m->num_trainable(), 11173962);
    // 20 convs + 20 BNs (4 tensors each, 2 trainable) + linear weight and bias.
    EXPECT_EQ(m->params().size(), 20u + 20u * 4u + 2u);
    EXPECT_EQ(m->trainable().size(), 20u + 20u * 2u + 2u);
}

TEST(ResNet18, NamesFollowPytorchCifar) {
    auto m = make_model(resnet(3, 32, 32));
    const std::vector<std::string> head = {"conv1.weight",       "bn1.weight",
                                           "bn1.bias",           "bn1.running_mean",
                                           "bn1.running_var",    "layer1.0.conv1.weight",
                                           "layer1.0.bn1.weight"};
    for (std::size_t i = 0; i < head.size(); ++i) EXPECT_EQ(m->params()[i].name, head[i]);
    EXPECT_EQ(m->params().back().name, "linear.bias");
    EXPECT_EQ(m->params()[m->params().size() - 2].name, "linear.weight");
    EXPECT_EQ(find(*m, "layer1.0.shortcut.0.weight"), nullptr);
    EXPECT_EQ(find(*m, "layer2.1.shortcut.0.weight"), nullptr);
    const int widths[4] = {64, 128, 256, 512};
    for (int l = 2; l <= 4; ++l) {
        const std::string p = "layer" + std::to_string(l) + ".0.shortcut.";
        const NamedParam* sc = find(*m, p + "0.weight");
        ASSERT_NE(sc, nullptr) << p;
        EXPECT_EQ(sc->tensor.shape(), (Shape{widths[l - 1], widths[l - 2], 1, 1}));
        ASSERT_NE(find(*m, p + "1.running_var"), nullptr) << p;
        const NamedParam* c1 = find(*m, "layer" + std::to_string(l) + ".0.conv1.weight");
        ASSERT_NE(c1, nullptr);
        EXPECT_EQ(c1->tensor.shape(), (Shape{widths[l - 1], widths[l - 2], 3, 3}));
        EXPECT_EQ(c1->fan_in, widths[l - 2] * 9);
        EXPECT_EQ(c1->fan_out, widths[l - 1] * 9);
    }
    EXPECT_EQ(find(*m, "linear.weight")->tensor.shape(), (Shape{10, 512}));
    // Canonical order is forward order: within a block conv1, bn1, conv2, bn2, shortcut.
    auto pos = [&](const std::string& n) {
        return std::find_if(m->params().begin(), m->params().end(),
                            [&](const NamedParam& p) { return p.name == n; }) -
               m->params().begin();
    };
    EXPECT_LT(pos("layer2.0.bn2.running_var"), pos("layer2.0.shortcut.0.weight"));
    EXPECT_LT(pos("layer2.0.shortcut.1.running_var"), pos("layer2.1.conv1.weight"));
}

TEST(ResNet18, ForwardBackwardTinyBatch) {
    auto m = make_model(resnet(3, 8, 8, 5));
    m->init(InitScheme::kHeUniform, 2024);
    test::expect_backward_reaches_every_param(*m, test::random_images(2, 3, 8, 8, 5), {1, 4}, 5);
}

TEST(ResNet18, OutputShapes) {
    autograd::NoGradGuard no_grad;
    for (auto [c, h, w] : {std::tuple{1, 28, 28}, std::tuple{3, 32, 32}}) {
        SCOPED_TRACE(str(c, "x", h, "x", w));
        auto m = make_model(resnet(c, h, w));
        m->init(InitScheme::kHeUniform, 1);
        ForwardContext ctx;
        EXPECT_EQ(m->forward(test::random_images(2, c, h, w, 5), ctx).shape(), (Shape{2, 10}));
    }
}

}  // namespace
}  // namespace dt

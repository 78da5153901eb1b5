// SPDX-License-Identifier: MIT
// MediumCNN(k): kernel-size validation, parameter names and counts for k = 1, 3, 5, 7, output
// shapes for 28x28x1 and 32x32x3, and a forward + backward pass that reaches every parameter.
#include <gtest/gtest.h>

#include <string>

#include "models/model.h"
#include "tests/support/models.h"

namespace dt {
namespace {

ModelConfig medium(int k, int c, int h, int w) {
    ModelConfig cfg = test::model_config("mediumcnn", c, h, w);
    cfg.kernel_size = k;
    return cfg;
}

TEST(MediumCNN, RejectsKernelSizes) {
    for (int k : {0, 2, 4, 9, -3}) EXPECT_THROW(make_model(medium(k, 1, 28, 28)), ValueError) << k;
    EXPECT_THROW(make_model(medium(3, 1, 0, 28)), ValueError);
}

TEST(MediumCNN, NamesAndCounts) {
    const int ch[7] = {1, 16, 32, 64, 128, 256, 512};
    for (int k : {1, 3, 5, 7}) {
        SCOPED_TRACE(k);
        auto m = make_model(medium(k, 1, 28, 28));
        ASSERT_EQ(m->params().size(), 6u * 5u + 2u);
        int64_t want = 0;
        for (int i = 0; i < 6; ++i) {
            const std::string n = std::to_string(i + 1);
            const NamedParam& conv = m->params()[5 * i];
            EXPECT_EQ(conv.name, "conv" + n + ".weight");
            EXPECT_EQ(conv.tensor.shape(), (Shape{ch[i + 1], ch[i], k, k}));
            EXPECT_EQ(conv.fan_in, int64_t{ch[i]} * k * k);
            EXPECT_EQ(conv.fan_out, int64_t{ch[i + 1]} * k * k);
            EXPECT_EQ(m->params()[5 * i + 1].name, "bn" + n + ".weight");
            EXPECT_EQ(m->params()[5 * i + 4].name, "bn" + n + ".running_var");
            want += int64_t{ch[i + 1]} * ch[i] * k * k + 2 * ch[i + 1];
        }
        EXPECT_EQ(m->params()[30].name, "fc.weight");
        EXPECT_EQ(m->params()[31].name, "fc.bias");
        want += 512 * 10 + 10;
        EXPECT_EQ(m->num_trainable(), want);
    }
    EXPECT_EQ(make_model(medium(3, 1, 28, 28))->num_trainable(),
              144 + 4608 + 18432 + 73728 + 294912 + 1179648 + 2016 + 5130);
}

TEST(MediumCNN, ForwardBackwardEveryKernelSize) {
    for (int k : {1, 3, 5, 7}) {
        for (auto [c, h, w] : {std::tuple{1, 28, 28}, std::tuple{3, 32, 32}}) {
            SCOPED_TRACE(str("k=", k, " input ", c, "x", h, "x", w));
            auto m = make_model(medium(k, c, h, w));
            m->init(InitScheme::kHeUniform, 17);
            test::expect_backward_reaches_every_param(*m, test::random_images(2, c, h, w, 3),
                                                      {3, 8}, 10);
        }
    }
}

}  // namespace
}  // namespace dt

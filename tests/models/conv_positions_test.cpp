// SPDX-License-Identifier: MIT
// Model::conv_positions, which the constructors state from the configured input size, against
// the convolutions a forward pass really runs (a kernel table whose conv2d_forward records each
// call's Ho * Wo): the split-batch plan (engine/runtime/allreduce_plan.h) reads the leaves of
// conv.wgrad from it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/core/backend.h"
#include "models/model.h"
#include "tests/support/models.h"

namespace dt {
namespace {

std::vector<int64_t>& seen() {
    static std::vector<int64_t> v;
    return v;
}

void recording_conv2d_forward(const float* x, const float* w, const float* b, float* y,
                              const kernels::Conv2dParams& p) {
    seen().push_back(p.ho * p.wo);
    kernels::cpu::kernel_table().conv2d_forward(x, w, b, y, p);
}

/// Ho * Wo of every convolution one forward pass of `cfg`'s model runs, in order.
std::vector<int64_t> run_positions(const ModelConfig& cfg) {
    std::unique_ptr<Model> m = make_model(cfg);
    kernels::KernelTable table = kernels::cpu::kernel_table();
    table.conv2d_forward = &recording_conv2d_forward;
    const ScopedKernelTable scoped(Device::kCpu, table);
    const autograd::NoGradGuard no_grad;
    seen().clear();
    ForwardContext ctx;
    ctx.training = false;
    (void)m->forward(test::random_images(1, cfg.in_channels, cfg.height, cfg.width, 7, 1), ctx);
    return seen();
}

TEST(ConvPositions, AreThoseOfTheForwardPass) {
    std::vector<ModelConfig> cfgs = {
        test::model_config("smallcnn", 1, 28, 28), test::model_config("smallcnn-bn", 3, 32, 32),
        test::model_config("smallcnn", 1, 17, 23), test::model_config("mediumcnn", 3, 32, 32),
        test::model_config("resnet18", 3, 32, 32), test::model_config("resnet18", 3, 13, 9)};
    ModelConfig k7 = test::model_config("mediumcnn", 3, 20, 12);
    k7.kernel_size = 7;
    cfgs.push_back(k7);
    for (const ModelConfig& cfg : cfgs) {
        SCOPED_TRACE(cfg.name + " " + std::to_string(cfg.height) + "x" + std::to_string(cfg.width));
        const std::vector<int64_t> ran = run_positions(cfg);
        EXPECT_FALSE(ran.empty());
        EXPECT_EQ(make_model(cfg)->conv_positions(), ran);
    }
    EXPECT_TRUE(make_model(test::model_config("gpt", 1, 1, 1))->conv_positions().empty());
}

}  // namespace
}  // namespace dt

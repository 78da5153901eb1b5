// SPDX-License-Identifier: MIT
// What the model tests build and check alike: a ModelConfig for an image geometry, a small GPT,
// random input images, and a forward + backward pass that must give every trainable parameter a
// gradient.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/ops/softmax_xent.h"
#include "models/gpt.h"
#include "models/model.h"
#include "tests/support/rng.h"

namespace dt::test {

/// Model `name` for (c, h, w) images and `classes` classes; the other fields keep their defaults.
inline ModelConfig model_config(const std::string& name, int c, int h, int w, int classes = 10) {
    ModelConfig cfg;
    cfg.name = name;
    cfg.in_channels = c;
    cfg.height = h;
    cfg.width = w;
    cfg.num_classes = classes;
    return cfg;
}

/// A GPT of these sizes, initialised Glorot-uniform from `seed` (the model tests' small ones).
inline std::unique_ptr<GPT> gpt_model(int layers, int heads, int embed, int64_t context,
                                      uint64_t seed) {
    ModelConfig c;
    c.name = "gpt";
    c.layers = layers, c.heads = heads, c.embed = embed, c.context = context;
    auto m = std::make_unique<GPT>(c);
    m->init(InitScheme::kGlorotUniform, seed);
    return m;
}

/// n images (c, h, w) of uniform values in [-1, 1) keyed by (seed, tag).
inline Tensor random_images(int n, int c, int h, int w, uint64_t seed, uint32_t tag = 0) {
    const int64_t count = int64_t{n} * c * h * w;
    return Tensor::from_vector({n, c, h, w}, uniform_floats(count, -1.0f, 1.0f, seed, tag));
}

/// A training forward pass of `m` on `images` (logits (N, classes)) and the backward pass of the
/// cross-entropy with `labels`: every trainable parameter gets a finite gradient of its shape that
/// is not all zero (the pass reached it), no buffer gets one.
inline void expect_backward_reaches_every_param(Model& m, const Tensor& images,
                                                const std::vector<int64_t>& labels,
                                                int64_t classes) {
    const Tensor logits = m.forward(images, ForwardContext{});
    ASSERT_EQ(logits.shape(), (Shape{images.dim(0), classes}));
    Tensor loss = softmax_cross_entropy(
        logits, Tensor::from_vector_i64({static_cast<int64_t>(labels.size())}, labels));
    ASSERT_TRUE(std::isfinite(loss.item()));
    loss.backward();
    for (const NamedParam& p : m.params()) {
        const Tensor g = p.tensor.grad();
        if (!p.trainable) {
            EXPECT_FALSE(g.defined()) << p.name;
            continue;
        }
        ASSERT_TRUE(g.defined()) << p.name;
        ASSERT_EQ(g.shape(), p.tensor.shape()) << p.name;
        double norm = 0;
        for (float v : g.to_vector()) {
            ASSERT_TRUE(std::isfinite(v)) << p.name;
            norm += std::fabs(v);
        }
        EXPECT_GT(norm, 0.0) << p.name << " got an all-zero gradient";
    }
}

}  // namespace dt::test

// SPDX-License-Identifier: MIT
// Model::init on the reference models: same seed -> same bits, different seed -> different;
// every weight inside its Glorot / He bound (with the fan_in/fan_out the layers register);
// biases, BN gammas/betas and running statistics at their constants; weights_sha256 is the hash
// of the trainable tensors only; on a (stand-in) device the same bits as on the cpu, also when
// the storage was placed there uncopied (init writes every element).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "engine/io/sha256.h"
#include "models/model.h"
#include "models/weights_hash.h"
#include "tests/support/compare.h"
#include "tests/support/fake_cuda.h"
#include "tests/support/models.h"

namespace dt {
namespace {

using test::model_config;

const ModelConfig kConfigs[] = {
    model_config("smallcnn", 1, 28, 28), model_config("smallcnn-bn", 3, 32, 32),
    model_config("mediumcnn", 3, 32, 32), model_config("resnet18", 3, 32, 32)};

void expect_same_bits(const Model& a, const Model& b) {
    ASSERT_EQ(a.params().size(), b.params().size());
    for (std::size_t i = 0; i < a.params().size(); ++i) {
        EXPECT_TRUE(
            test::bitwise_equal(a.params()[i].tensor.to_vector(), b.params()[i].tensor.to_vector()))
            << a.params()[i].name;
    }
}

TEST(ModelInit, SameSeedSameBitsDifferentSeedDifferent) {
    for (const ModelConfig& cfg : kConfigs) {
        SCOPED_TRACE(cfg.name);
        auto a = make_model(cfg), b = make_model(cfg), c = make_model(cfg);
        a->init(InitScheme::kGlorotUniform, 1234);
        b->init(InitScheme::kGlorotUniform, 1234);
        c->init(InitScheme::kGlorotUniform, 1235);
        expect_same_bits(*a, *b);
        EXPECT_EQ(weights_sha256(*a), weights_sha256(*b));
        EXPECT_NE(weights_sha256(*a), weights_sha256(*c));
        for (std::size_t i = 0; i < a->params().size(); ++i) {
            if (a->params()[i].role != ParamRole::kWeight) continue;
            EXPECT_FALSE(test::bitwise_equal(a->params()[i].tensor.to_vector(),
                                             c->params()[i].tensor.to_vector()))
                << a->params()[i].name;
        }
        // Re-initialising overwrites everything (no dependence on the previous contents).
        c->init(InitScheme::kGlorotUniform, 1234);
        expect_same_bits(*a, *c);
    }
}

TEST(ModelInit, WeightsWithinBoundAndConstantsSet) {
    for (const ModelConfig& cfg : kConfigs) {
        for (InitScheme scheme : {InitScheme::kGlorotUniform, InitScheme::kHeUniform}) {
            SCOPED_TRACE(cfg.name + (scheme == InitScheme::kHeUniform ? " he" : " glorot"));
            auto m = make_model(cfg);
            m->init(scheme, 99);
            for (const NamedParam& p : m->params()) {
                const std::vector<float> v = p.tensor.to_vector();
                if (p.role != ParamRole::kWeight) {
                    const float want =
                        (p.role == ParamRole::kBnGamma || p.role == ParamRole::kBnRunningVar)
                            ? 1.0f
                            : 0.0f;
                    for (float x : v) ASSERT_EQ(x, want) << p.name;
                    continue;
                }
                ASSERT_GT(p.fan_in, 0) << p.name;
                ASSERT_GT(p.fan_out, 0) << p.name;
                const double fan = scheme == InitScheme::kGlorotUniform
                                       ? static_cast<double>(p.fan_in + p.fan_out)
                                       : static_cast<double>(p.fan_in);
                const float bound = static_cast<float>(std::sqrt(6.0 / fan));
                float max_abs = 0;
                double sum = 0;
                for (float x : v) {
                    ASSERT_LE(std::fabs(x), bound) << p.name;
                    max_abs = std::max(max_abs, std::fabs(x));
                    sum += x;
                }
                if (v.size() >= 1000) {  // uniform on [-a, a): reaches the edge, mean near 0
                    EXPECT_GT(max_abs, 0.99f * bound) << p.name;
                    EXPECT_LT(std::fabs(sum / v.size()), 0.1 * bound) << p.name;
                }
            }
        }
    }
}

TEST(ModelInit, OnADeviceGivesTheCpusBits) {
    // The stand-in cuda device faults on host access to its memory: the init runs there.
    for (const ModelConfig& cfg : kConfigs) {
        SCOPED_TRACE(cfg.name);
        auto on_cpu = make_model(cfg);
        on_cpu->init(InitScheme::kHeUniform, 5);
        const test::ScopedFakeCuda stand_in;
        auto on_device = make_model(cfg);
        on_device->to(Device::kCuda);
        on_device->init(InitScheme::kHeUniform, 5);
        ASSERT_EQ(on_device->device(), Device::kCuda);
        expect_same_bits(*on_cpu, *on_device);
        // The trainer's way: storage placed on the device uncopied, then init writes every
        // element (NaN everywhere first, so an element it left would show).
        auto placed = make_model(cfg);
        placed->place_for_init(Device::kCuda);
        for (const NamedParam& p : placed->params()) {
            ASSERT_EQ(p.tensor.device(), Device::kCuda) << p.name;
            Tensor(p.tensor).fill(NAN);
        }
        placed->init(InitScheme::kHeUniform, 5);
        expect_same_bits(*on_cpu, *placed);
    }
}

TEST(ModelInit, FansOfSmallCnn) {
    auto m = make_model(model_config("smallcnn", 1, 28, 28));
    const NamedParam& conv1 = m->params()[0];
    EXPECT_EQ(conv1.fan_in, 1 * 9);
    EXPECT_EQ(conv1.fan_out, 16 * 9);
    const NamedParam& fc1 = m->params()[6];
    ASSERT_EQ(fc1.name, "fc1.weight");
    EXPECT_EQ(fc1.fan_in, 288);
    EXPECT_EQ(fc1.fan_out, 32);
}

TEST(WeightsHash, IsHashOfTrainableTensorsOnly) {
    auto m = make_model(model_config("smallcnn-bn", 1, 28, 28));
    m->init(InitScheme::kGlorotUniform, 7);
    const std::string h = weights_sha256(*m);
    EXPECT_EQ(h.size(), 64u);
    EXPECT_EQ(h, io::weights_sha256(m->trainable()));
    std::string bytes;
    for (const NamedParam& p : m->params()) {
        if (!p.trainable) continue;
        bytes.append(reinterpret_cast<const char*>(p.tensor.f32()), p.tensor.nbytes());
    }
    EXPECT_EQ(h, io::sha256_hex(bytes));
    // Buffers do not count; any trainable bit does.
    Tensor running_mean = m->params()[3].tensor;
    running_mean.f32()[0] = 5.0f;
    EXPECT_EQ(weights_sha256(*m), h);
    Tensor w = m->params()[0].tensor;
    uint32_t u;
    std::memcpy(&u, &w.f32()[7], 4);
    u ^= 1u;  // flip the lowest mantissa bit of one weight
    std::memcpy(&w.f32()[7], &u, 4);
    EXPECT_NE(weights_sha256(*m), h);
}

}  // namespace
}  // namespace dt

// SPDX-License-Identifier: MIT
// The DeviceOps fixture (tests/device/device_ops*_test.cpp): each test runs twice, on a
// stand-in cuda device (the CPU's kernels behind memory that faults on host access,
// tests/support/fake_cuda.h) and on a real CUDA device (skipped, saying so, without one), and
// compares an op's output and input gradients with the cpu's: bitwise in every deterministic
// mode, close under atomic. Instantiated once, in device_ops_test.cpp (Device/DeviceOps.*).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/noise/reduce_sites.h"
#include "engine/runtime/cuda_device.h"
#include "tests/support/compare.h"
#include "tests/support/fake_cuda.h"
#include "tests/support/modes.h"
#include "tests/support/rng.h"

namespace dt::test {

using kernels::common::AccumMode;
using kernels::common::AccumSpec;

enum class Stand { kFake, kCuda };

class DeviceOps : public ::testing::TestWithParam<Stand> {
 protected:
    void SetUp() override {
        if (GetParam() == Stand::kFake) {
            fake_ = std::make_unique<test::ScopedFakeCuda>();
            return;
        }
        std::string why;
        if (!cuda_device::available(&why)) GTEST_SKIP() << "no CUDA device: " << why;
    }
    void TearDown() override {
        autograd::clear_tape();
        if (GetParam() == Stand::kCuda && cuda_device::available()) cuda_device::check();
    }
    std::unique_ptr<test::ScopedFakeCuda> fake_;
};

inline Tensor uniform(const Shape& shape, uint32_t tag, float lo = -1.0f, float hi = 1.0f) {
    return Tensor::from_vector(
        shape, test::uniform_floats(shape_numel(shape), lo, hi, test::test_seed(), tag));
}

using Op = std::function<Tensor(const std::vector<Tensor>&)>;

/// The op's output and the gradients of its inputs for a fixed dy, on device d, on the host, with
/// every reduction site in mode `spec` (call counters from 0: permuted keys each call's order).
inline std::vector<std::vector<float>> run_op(Device d, const AccumSpec& spec, const Op& op,
                                              const std::vector<Tensor>& inputs) {
    const ScopedReduceConfig modes(spec);
    std::vector<Tensor> on;
    for (const Tensor& t : inputs) {
        Tensor x = t.to(d).clone();
        if (x.dtype() == DType::kF32) x.set_requires_grad(true);
        on.push_back(x);
    }
    const Tensor y = op(on);
    std::vector<std::vector<float>> out = {y.to_vector()};
    if (y.impl().grad_fn) {
        const Tensor dy = uniform(y.shape(), 77).to(d);
        for (const Tensor& g : y.impl().grad_fn->backward(dy))
            out.push_back(g.defined() ? g.to_vector() : std::vector<float>{});
    }
    autograd::clear_tape();
    return out;
}

/// op on the cuda device equals op on the cpu: bitwise in every deterministic mode, within
/// `atomic_tol` (relative to the largest magnitude) under atomic.
inline void expect_device_equals_cpu(const Op& op, const std::vector<Tensor>& inputs,
                                     double atomic_tol = 1e-5) {
    for (const AccumSpec& spec : test::all_mode_specs(11)) {
        SCOPED_TRACE(test::accum_mode_name(spec.mode));
        const auto want = run_op(Device::kCpu, spec, op, inputs);
        const auto got = run_op(Device::kCuda, spec, op, inputs);
        ASSERT_EQ(got.size(), want.size());
        for (std::size_t k = 0; k < want.size(); ++k) {
            SCOPED_TRACE(k == 0 ? std::string("output")
                                : "gradient of input " + std::to_string(k - 1));
            ASSERT_EQ(got[k].size(), want[k].size());
            const auto n = static_cast<int64_t>(want[k].size());
            if (spec.mode != AccumMode::kAtomic) {
                EXPECT_TRUE(test::bitwise_equal(got[k].data(), want[k].data(), n));
                continue;
            }
            double scale = 0;
            for (float v : want[k]) scale = std::max(scale, std::fabs(double(v)));
            for (int64_t i = 0; i < n; ++i)
                ASSERT_NEAR(got[k][i], want[k][i], atomic_tol * (scale + 1e-30)) << "at " << i;
        }
    }
}

}  // namespace dt::test

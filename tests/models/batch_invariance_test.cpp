// SPDX-License-Identifier: MIT
// Batch invariance of evaluation (issue 22): a sample's logits do not depend on the batch it is
// evaluated in: not on the batch size (alone, in a batch of 3, of 9), not on its position
// (reversed batch), not on the CPU instruction set, for every model (dropout configured:
// evaluation leaves it out; batch norm uses its running statistics, set away from 0 and 1 here).
// Every kernel of the forward pass owns its sample's rows (the GEMM's and convolution's fma
// chains run over features, never over the batch), so this holds bit for bit.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/runtime/isa.h"
#include "models/model.h"
#include "models/model_io.h"
#include "tests/support/models.h"
#include "tests/support/rng.h"

namespace dt {
namespace {

ModelConfig config(const std::string& name, int c, int hw, int k = 3) {
    ModelConfig cfg = test::model_config(name, c, hw, hw);
    cfg.kernel_size = k;
    cfg.dropout = 0.3f;
    return cfg;
}

/// Rows `rows` of x (N, C, H, W) as a batch.
Tensor pick(const Tensor& x, const std::vector<int64_t>& rows) {
    const int64_t per = x.numel() / x.dim(0);
    Shape s = x.shape();
    s[0] = static_cast<int64_t>(rows.size());
    Tensor out = Tensor::empty(s);
    for (std::size_t i = 0; i < rows.size(); ++i)
        std::copy_n(x.f32() + rows[i] * per, per, out.f32() + static_cast<int64_t>(i) * per);
    return out;
}

std::vector<uint32_t> row_bits(const Tensor& logits, int64_t r) {
    const int64_t K = logits.dim(1);
    std::vector<uint32_t> b(static_cast<std::size_t>(K));
    std::memcpy(b.data(), logits.f32() + r * K, static_cast<std::size_t>(K) * 4);
    return b;
}

TEST(BatchInvariance, LogitsOfASampleDoNotDependOnItsBatch) {
    const ModelConfig configs[] = {config("smallcnn", 1, 28),     config("smallcnn-bn", 1, 28),
                                   config("mediumcnn", 3, 32, 1), config("mediumcnn", 3, 32, 3),
                                   config("mediumcnn", 3, 32, 7), config("resnet18", 3, 32)};
    const int64_t N = 9;
    for (const ModelConfig& cfg : configs) {
        SCOPED_TRACE(cfg.name + " k" + std::to_string(cfg.kernel_size));
        std::unique_ptr<Model> m = make_model(cfg);
        m->init(InitScheme::kGlorotUniform, 7);
        for (auto& [name, t] : model_named_tensors(*m)) {  // running stats away from 0 / 1
            if (name.find("running_mean") != std::string::npos) t.fill(0.1f);
            if (name.find("running_var") != std::string::npos) t.fill(1.7f);
        }
        const Tensor x = Tensor::from_vector(
            {N, cfg.in_channels, cfg.height, cfg.width},
            test::uniform_floats(N * cfg.in_channels * cfg.height * cfg.width, 0, 1, 11));
        autograd::NoGradGuard no_grad;
        ForwardContext ctx;
        ctx.training = false;
        auto logits = [&](const std::vector<int64_t>& rows) {
            ctx.sample_ids = rows;
            return m->forward(pick(x, rows), ctx);
        };
        std::vector<int64_t> all(N), reversed(N);
        for (int64_t i = 0; i < N; ++i) all[i] = i, reversed[i] = N - 1 - i;
        const Tensor whole = logits(all);
        const Tensor back = logits(reversed);
        const Tensor middle = logits({4, 5, 6});
        for (int64_t i = 0; i < N; ++i)
            EXPECT_EQ(row_bits(back, N - 1 - i), row_bits(whole, i)) << "reversed, sample " << i;
        for (int64_t i : {0, 4, 8})
            EXPECT_EQ(row_bits(logits({i}), 0), row_bits(whole, i)) << "alone, sample " << i;
        for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(row_bits(middle, i), row_bits(whole, 4 + i));
        const CpuIsa before = cpu_isa();
        for (CpuIsa isa : supported_cpu_isas()) {
            set_cpu_isa(isa);
            EXPECT_EQ(row_bits(logits({5}), 0), row_bits(whole, 5)) << cpu_isa_name(isa);
        }
        set_cpu_isa(before);
    }
}

}  // namespace
}  // namespace dt

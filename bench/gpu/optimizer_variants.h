// SPDX-License-Identifier: MIT
// dt_gpu_kernel_bench's optimizer line: the Adam update of every trainable parameter of a model
// (ResNet-18: 62 tensors, SmallCNN: 8) in one kernel-table call (adam_update_each: one launch per
// 16 parameters) against one call per parameter (one launch each, the way it was), and whether
// both give the same bits from the same state. Prints {"op": "optimizer", ...} per model.
#pragma once
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/gpu/kernel_bench_common.h"
#include "engine/core/tensor.h"
#include "kernels/adam.h"
#include "models/model.h"

namespace dt::bench {

inline void optimizer_variants(Timer& timer, int reps) {
    for (const char* name : {"smallcnn", "resnet18"}) {
        ModelConfig mc;
        mc.name = name;
        mc.in_channels = std::string(name) == "resnet18" ? 3 : 1;
        mc.height = mc.width = std::string(name) == "resnet18" ? 32 : 28;
        const std::unique_ptr<Model> model = make_model(mc);
        model->init(InitScheme::kGlorotUniform, 1);
        // Copies of the parameters and made-up gradients and moments, on the device.
        std::vector<Tensor> p0, g, m0, v0;
        for (const Tensor& p : model->trainable()) {
            p0.push_back(p.to(Device::kCuda));
            g.push_back(uniform(p.shape(), 40 + static_cast<uint32_t>(g.size())));
            m0.push_back(Tensor::zeros(p.shape(), DType::kF32, Device::kCuda));
            v0.push_back(Tensor::zeros(p.shape(), DType::kF32, Device::kCuda));
        }
        // Each variant from the same state: one step, its parameters read back for the bits.
        const auto run = [&](bool batched, std::vector<Tensor>& p, double* ms) {
            std::vector<Tensor> m, v;
            p.clear();
            for (std::size_t i = 0; i < p0.size(); ++i)
                p.push_back(p0[i].clone()), m.push_back(m0[i].clone()), v.push_back(v0[i].clone());
            std::vector<kernels::AdamTensor> items;
            for (std::size_t i = 0; i < p.size(); ++i) {
                kernels::AdamParams q;
                q.n = p[i].numel(), q.c2s = 0.0316f, q.neg_step = -4e-4f;
                items.push_back({p[i].f32(), g[i].f32(), m[i].f32(), v[i].f32(), q});
            }
            const auto step = [&] {
                if (batched) {
                    kernels::cuda::adam_update_each(items.data(),
                                                    static_cast<int64_t>(items.size()));
                } else {
                    for (const kernels::AdamTensor& t : items)
                        kernels::cuda::adam_update_each(&t, 1);
                }
            };
            std::vector<Tensor> first;
            step();  // the step whose bits are compared
            for (const Tensor& t : p) first.push_back(t.clone());
            *ms = median_time(timer, reps, step);
            p = first;
        };
        std::vector<Tensor> pa, pb;
        double batched_ms = 0, each_ms = 0;
        run(true, pa, &batched_ms);
        run(false, pb, &each_ms);
        bool same = true;
        for (std::size_t i = 0; i < pa.size(); ++i) {
            const std::vector<float> a = pa[i].to_vector(), b = pb[i].to_vector();
            same = same && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
        }
        std::printf(
            "{\"op\": \"optimizer\", \"kernel\": \"adam\", \"shape\": \"%s, %zu parameters\", "
            "\"batched_ms\": %.4f, \"per_parameter_ms\": %.4f, \"batched_vs_per_parameter\": "
            "%.3f, \"bits_equal\": %s}\n",
            name, p0.size(), batched_ms, each_ms, batched_ms / each_ms, same ? "true" : "false");
        std::fflush(stdout);
    }
}

}  // namespace dt::bench

// SPDX-License-Identifier: MIT
// A real training step's gradients for dt_allreduce_bench --inputs MODEL: one forward and backward
// of bench/trainee.h's model and batch (seed 0) on this process, under the deterministic preset
// (the float gradients) and under exact with a BatchSplit over the run's processes (the exact
// sums that the gradients' exchange rounds), each parameter in canonical order, concatenated.
#pragma once
#include <cstring>
#include <string>
#include <vector>

#include "bench/trainee.h"
#include "engine/noise/reduce_sites.h"
#include "engine/runtime/batch_split.h"
#include "engine/runtime/collective.h"

namespace dt::bench {

struct StepGradients {
    std::vector<float> floats;
    std::vector<kernels::common::ExactAcc> exact;
};

inline StepGradients step_gradients(const std::string& model) {
    const Shape* shape = nullptr;
    for (const Shape& s : kTrainStepShapes)
        if (model == shape_name(s)) shape = &s;
    DT_CHECK_VALUE(shape != nullptr, "--inputs ", model, ": not a model of BM_TrainStep (hint: ",
                   "smallcnn, smallcnn-bn, mediumcnn_k3, resnet18, gpt)");
    StepGradients g;
    {
        const ScopedReduceConfig specs(preset_specs("deterministic"));
        Trainee t(*shape);
        autograd::backward(softmax_cross_entropy(t.model->forward(t.images, t.ctx), t.labels));
        for (const Tensor& p : t.model->trainable())
            g.floats.insert(g.floats.end(), p.grad().f32(), p.grad().f32() + p.numel());
    }
    {
        const ScopedReduceConfig specs(preset_specs("exact"));
        Trainee t(*shape);
        BatchSplit split(t.model->trainable(), world(), /*sync_batchnorm=*/true);
        const ScopedBatchSplit scoped(split);
        split.begin_step(shape->batch * world().size());
        split.begin_micro(shape->batch * world().size());
        autograd::backward(softmax_cross_entropy(t.model->forward(t.images, t.ctx), t.labels));
        const kernels::common::AccumSpec exact = reduce_site_spec(ReduceSite::kConvWgrad);
        for (const Tensor& p : t.model->trainable()) {
            const kernels::common::ExactAcc* a = split.exact_grad(p, exact);
            if (a != nullptr) g.exact.insert(g.exact.end(), a, a + p.numel());
        }
    }
    return g;
}

}  // namespace dt::bench

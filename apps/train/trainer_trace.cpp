// SPDX-License-Identifier: MIT
// The trainer's entries in the hash trail (contract in trainer_trace.h).
#include "apps/train/trainer_trace.h"

#include <unordered_map>

#include "engine/autograd/trace.h"
#include "models/model.h"

namespace dt {

using autograd::current_trace;
using autograd::TraceSink;

void trace_name_model(const Model& model) {
    TraceSink* sink = current_trace();
    if (sink == nullptr) return;
    // The model's own tensors (names go by identity): not model_named_tensors, whose cpu copies of
    // a device model's tensors would leave every parameter of a device run unnamed in the trail.
    std::unordered_map<const TensorImpl*, std::string> names;
    for (const NamedParam& p : model.params()) names[p.tensor.impl_ptr().get()] = p.name;
    sink->name_tensors(std::move(names));
}

void trace_begin_step(int64_t step) {
    if (TraceSink* sink = current_trace()) sink->set_step(step);
}

void trace_batch(const Batch& batch) {
    TraceSink* sink = current_trace();
    if (sink == nullptr) return;
    sink->add("data", "batch", "images", batch.images);
    sink->add("data", "batch", "labels", batch.labels);
}

void trace_parameters(const Model& model, bool gradients) {
    TraceSink* sink = current_trace();
    if (sink == nullptr) return;
    for (const Tensor& p : model.trainable()) {
        const std::string* name = sink->name_of(p);
        const std::string label = name != nullptr ? *name : std::string("parameter");
        if (!gradients) {
            sink->add("update", "optimizer", label, p);
        } else if (p.grad().defined()) {
            sink->add("gradients", "step", "grad " + label, p.grad());
        }
    }
}

void trace_grad_norm(const Tensor& sum_of_squares) {
    TraceSink* sink = current_trace();
    if (sink == nullptr || !sum_of_squares.defined()) return;
    sink->add("gradients", "clip_grad_norm", "sum of squares", sum_of_squares);
}

}  // namespace dt

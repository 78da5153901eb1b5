// SPDX-License-Identifier: MIT
// The noise switches inside the training loop (contract in trainer_noise.h).
#include "apps/train/trainer_noise.h"

#include <cmath>
#include <cstdio>
#include <tuple>
#include <vector>

#include "engine/core/error.h"
#include "engine/ops/non_finite_scan.h"

namespace dt {

namespace {

/// "%a (%.9g)": the exact value and a readable one.
std::string hex_float(float v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%a (%.9g)", static_cast<double>(v), static_cast<double>(v));
    return buf;
}

/// What a tensor is, for a message: "parameter conv1.weight" or "an intermediate tensor".
std::string tensor_role(const Model& model, const Tensor& t) {
    for (const NamedParam& p : model.params()) {
        if (p.tensor.same(t)) return "parameter " + p.name;
    }
    return t.defined() ? str("an intermediate tensor ", t.str()) : "an intermediate tensor";
}

}  // namespace

std::string perturb_initial_weight(Model& model, const InitPerturb& p) {
    std::vector<std::string> names;
    std::vector<Tensor> tensors;
    for (const NamedParam& param : model.params()) {
        if (!param.trainable) continue;
        names.push_back(param.name);
        tensors.push_back(param.tensor);
    }
    float before = 0, after = 0;
    try {
        std::tie(before, after) = apply_init_perturb(p, names, tensors);
    } catch (const ValueError& e) {
        throw ValueError(str("--init-perturb: ", e.what()));
    }
    return str(p.param, "[", p.index, "]: ", hex_float(before), " -> ", hex_float(after));
}

std::string step_text(int e, int64_t b, int64_t steps) {
    return str("at epoch ", e + 1, ", step ", b + 1, " of ", steps, " (global step ",
               e * steps + b + 1, ")");
}

void backward_checked(const Tensor& loss, const Model& model, double lr, int e, int64_t b,
                      int64_t steps) {
    try {
        loss.backward();
    } catch (const autograd::NonFiniteGradient& g) {
        throw TrainingDiverged(str("non-finite gradient ", step_text(e, b, steps), ": ", g.what(),
                                   "; that input is ", tensor_role(model, g.tensor), " (op ", g.op,
                                   "); try a smaller --lr (now ", lr, ")"));
    }
    // With the tape's check on, every gradient of the pass was scanned, sums of contributions
    // included (a parameter's gradient is one of them). Otherwise every trainable gradient is
    // scanned here: one scan of all of them (one wait for a GPU).
    if (autograd::check_finite()) return;
    std::vector<const NamedParam*> scanned;
    NonFiniteScan scan(loss.device());
    for (const NamedParam& p : model.params()) {
        if (!p.trainable || !p.tensor.grad().defined()) continue;
        scanned.push_back(&p);
        scan.add(p.tensor.grad());
    }
    const std::vector<NonFiniteAt> found = scan.results();
    for (std::size_t k = 0; k < found.size(); ++k) {
        if (found[k].found()) {
            throw TrainingDiverged(str("non-finite gradient ", step_text(e, b, steps), ": ",
                                       found[k].value, " at element ", found[k].index,
                                       " of the gradient of parameter ", scanned[k]->name,
                                       "; try a smaller --lr (now ", lr, ")"));
        }
    }
}

}  // namespace dt

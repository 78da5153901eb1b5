// SPDX-License-Identifier: MIT
// Autograd helpers for op and optimizer tests: a loss with a chosen upstream gradient, an op's
// backward rule run on its own, random parameters, parameters with given values and gradients.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/autograd/tape.h"
#include "engine/core/tensor.h"
#include "tests/support/rng.h"

namespace dt::test {

/// A one-element loss whose gradient with respect to y is the fixed tensor dy, so backward()
/// drives an op's backward rule with exactly dy.
inline Tensor weighted_sum(const Tensor& y, const std::vector<float>& dy) {
    Tensor loss = Tensor::zeros({1});
    const Shape shape = y.shape();
    autograd::record(loss, "weighted_sum", {y}, [shape, dy](const Tensor&) {
        return std::vector<Tensor>{Tensor::from_vector(shape, dy)};
    });
    return loss;
}

/// The gradients of the inputs of the op that made y, from its recorded backward rule with the
/// upstream gradient dy (the tape is cleared: nothing else runs backward).
inline std::vector<Tensor> backward_of(const Tensor& y, const Tensor& dy) {
    std::vector<Tensor> g = y.impl().grad_fn->backward(dy);
    autograd::clear_tape();
    return g;
}

/// A tensor of uniform values in [-1, 1) keyed by (seed, tag) that requires a gradient.
inline Tensor random_param(const Shape& s, uint64_t seed, uint32_t tag) {
    Tensor t = Tensor::from_vector(s, uniform_floats(shape_numel(s), -1, 1, seed, tag));
    t.set_requires_grad(true);
    return t;
}

/// A 1-D tensor holding v that requires a gradient: a parameter for optimizer tests.
inline Tensor param(const std::vector<float>& v) {
    Tensor t = Tensor::from_vector({static_cast<int64_t>(v.size())}, v);
    t.set_requires_grad(true);
    return t;
}

/// Gives p the gradient g, as backward() would (g has p's number of elements).
inline void set_grad(Tensor& p, const std::vector<float>& g) {
    p.set_grad(Tensor::from_vector(p.shape(), g));
}

}  // namespace dt::test

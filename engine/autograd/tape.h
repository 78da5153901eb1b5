// SPDX-License-Identifier: MIT
// Reverse-mode autograd over a tape (one per thread).
//
// Forward ops append one Node per differentiable result, in creation order. backward(loss) seeds
// d loss = 1 and walks the tape in *reverse creation order*; each node's backward closure returns
// one gradient per input (undefined where none is needed).
//
// ORDER of gradient accumulation (for a tensor used by several ops): contributions arrive in
// reverse creation order of the consuming nodes, and within one node in input order. The first
// contribution is stored as is; each later one is added out of place as `acc = acc + g`, element
// by element (acc on the left). Leaves (parameters) accumulate into .grad() by the same rule,
// also across several backward() calls until zero_grad(). A leaf's first gradient is stored as
// its own copy, so no two leaves ever share a gradient buffer.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/tensor.h"

namespace dt::autograd {

/// Maps the gradient of a node's output to the gradients of its inputs (same order as inputs).
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_out)>;

struct Node {
    std::string name;            // op name, for error messages ("conv2d", ...)
    std::vector<Tensor> inputs;  // the op's differentiable inputs
    BackwardFn backward;
    Tensor grad_out;             // accumulated gradient of the node's output
};

/// True unless a NoGradGuard is alive on this thread.
bool grad_enabled();

/// Disables recording for its lifetime (evaluation, optimizer updates). Nests.
class NoGradGuard {
 public:
    NoGradGuard();
    ~NoGradGuard();
    NoGradGuard(const NoGradGuard&) = delete;
    NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
    bool previous_;
};

/// True when recording is on and some input requires a gradient.
bool needs_grad(const std::vector<Tensor>& inputs);

/// Records `out` as produced by op `name` from `inputs`; marks out.requires_grad. Call only when
/// needs_grad(inputs) is true. The closure must capture exactly the state backward needs.
void record(Tensor& out, const std::string& name, std::vector<Tensor> inputs, BackwardFn fn);

/// Runs the reverse pass from a one-element float tensor and then clears this thread's tape.
void backward(const Tensor& loss);
/// The same from any recorded output with its gradient given (grad_output: output's shape and
/// device), as the pass from a loss hands it to the op that made it.
void backward(const Tensor& output, const Tensor& grad_output);

/// While alive, backward() on this thread calls `fn` with each leaf (a tensor that requires a
/// gradient and no node made) once the pass has made its gradient final: right after the node
/// that took it first in creation order, the last of its consumers in the pass, whether or not
/// that node was on a path to the loss. Leaves the pass never meets are not named. A
/// data-parallel step starts a parameter's exchange there while the pass goes on. Nests: the
/// innermost hook is the one called.
class LeafFinalHook {
 public:
    explicit LeafFinalHook(std::function<void(const Tensor& leaf)> fn);
    ~LeafFinalHook();
    LeafFinalHook(const LeafFinalHook&) = delete;
    LeafFinalHook& operator=(const LeafFinalHook&) = delete;

 private:
    std::function<void(const Tensor&)> fn_;
    LeafFinalHook* previous_;
    friend void backward(const Tensor&, const Tensor&);
};

/// Opt-in check of every gradient (off by default; per thread). When on, backward() scans each
/// gradient a node's backward returns, and each sum of two contributions, and at its end throws
/// NonFiniteGradient for the first NaN or Inf in the order of the pass: the op whose backward
/// produced it, which input, the element and its value. The tape is cleared as usual. Cost: one
/// pass over every gradient; on a GPU the scans are queued and their answers come back in one
/// copy at the end of the backward (one wait, not one per gradient).
void set_check_finite(bool on);
bool check_finite();

/// Sets the check (on by default) for its lifetime and restores the previous setting: a run, a
/// benchmark's step.
class FiniteCheckGuard {
 public:
    explicit FiniteCheckGuard(bool on = true) : previous_(check_finite()) { set_check_finite(on); }
    ~FiniteCheckGuard() { set_check_finite(previous_); }
    FiniteCheckGuard(const FiniteCheckGuard&) = delete;
    FiniteCheckGuard& operator=(const FiniteCheckGuard&) = delete;

 private:
    bool previous_;
};

/// A NaN/Inf gradient found by the check above. `tensor` is the input whose gradient it is when
/// that is a leaf (a parameter; callers map it to a name), undefined for an intermediate (freed
/// by the end of the backward).
class NonFiniteGradient : public Error {
 public:
    NonFiniteGradient(const std::string& msg, std::string op_name, std::size_t input_index,
                      Tensor input_tensor, int64_t element_index, float element_value)
        : Error(msg),
          op(std::move(op_name)),
          input(input_index),
          tensor(std::move(input_tensor)),
          element(element_index),
          value(element_value) {}
    std::string op;     // the node's op name ("conv2d", ...), or "accumulate" for a sum
    std::size_t input;  // input index within the node
    Tensor tensor;      // the input whose gradient is non-finite, when a leaf
    int64_t element;    // first non-finite element (row-major)
    float value;        // +-Inf, or a quiet NaN of its sign (the payload is not kept)
};

/// Number of nodes currently on this thread's tape (for tests).
std::size_t tape_size();
/// Drops every recorded node (e.g. after an evaluation that recorded by mistake).
void clear_tape();

/// acc + g elementwise into a new tensor (the accumulation rule above). Shapes must match.
Tensor accumulate(const Tensor& acc, const Tensor& g);

}  // namespace dt::autograd

// SPDX-License-Identifier: MIT
#include "engine/autograd/tape.h"

#include <cmath>
#include <optional>
#include <unordered_set>
#include <vector>

#include "engine/autograd/trace.h"
#include "engine/core/backend.h"
#include "engine/ops/non_finite_scan.h"

namespace dt::autograd {

namespace {

struct Tape {
    std::vector<std::shared_ptr<Node>> nodes;  // in creation order
};

thread_local Tape t_tape;
thread_local bool t_grad_enabled = true;
thread_local bool t_check_finite = false;
thread_local LeafFinalHook* t_leaf_final = nullptr;

// For each node (creation order), the leaves it is the first consumer of: their gradients are
// final once the reverse pass has passed it.
std::vector<std::vector<Tensor>> leaves_final_after(
    const std::vector<std::shared_ptr<Node>>& nodes) {
    std::vector<std::vector<Tensor>> after(nodes.size());
    std::unordered_set<const TensorImpl*> seen;
    for (std::size_t k = 0; k < nodes.size(); ++k) {
        for (const Tensor& in : nodes[k]->inputs) {
            if (in.defined() && in.is_leaf() && in.requires_grad() &&
                seen.insert(in.impl_ptr().get()).second)
                after[k].push_back(in);
        }
    }
    return after;
}

// The finite check of one backward: every gradient a node returns and every sum of two
// contributions is scanned (NonFiniteScan: queued on a GPU, 16 gradients a launch; a gradient is
// never changed once made, so a scan issued later sees the same values); the answers come back
// once, at the end, and the first non-finite gradient in the order of the pass is reported, as a
// check that stopped there would have.
class FiniteChecks {
 public:
    explicit FiniteChecks(Device device) : scan_(device) {}

    /// Scans `g`, the gradient for input i of `node` (or the sum of its contributions when
    /// `summed`). The input is kept only when it is a leaf (alive anyway: a parameter).
    void add(const Tensor& g, const Node& node, std::size_t i, const Tensor& in, bool summed) {
        if (g.dtype() != DType::kF32) return;
        scan_.add(g);
        checks_.push_back({node.name, i, in.is_leaf() ? in : Tensor(), in.str(), summed});
    }

    /// Throws NonFiniteGradient for the first non-finite gradient scanned, if any.
    void report() {
        if (checks_.empty()) return;
        const std::vector<NonFiniteAt> found = scan_.results();
        for (std::size_t k = 0; k < checks_.size(); ++k) {
            if (!found[k].found()) continue;
            const Check& c = checks_[k];
            const std::string what = c.summed ? str("adding the gradient from the backward of ",
                                                    c.op, " to earlier contributions gave ")
                                              : str("the backward of ", c.op, " returned ");
            throw NonFiniteGradient(
                str("non-finite gradient: ", what, found[k].value, " at element ", found[k].index,
                    " of the gradient for its input ", c.input, " (", c.input_str, ")"),
                c.op, c.input, c.leaf, found[k].index, found[k].value);
        }
    }

 private:
    struct Check {
        std::string op;
        std::size_t input;
        Tensor leaf;  // the input when it is a leaf, else undefined
        std::string input_str;
        bool summed;
    };
    NonFiniteScan scan_;
    std::vector<Check> checks_;
};

// Adds a gradient contribution to `slot` by the documented rule.
void add_into(std::shared_ptr<TensorImpl>& slot, const Tensor& g, const Tensor& owner,
              const std::string& op) {
    DT_CHECK_SHAPE(g.shape() == owner.shape(), "backward of ", op, " produced a gradient ",
                   g.str(), " for an input of shape ", owner.str(),
                   " (hint: a bug in that op's backward rule)");
    if (!slot) {
        slot = g.impl_ptr();
    } else {
        slot = accumulate(Tensor(slot), g).impl_ptr();
    }
}

// One node of the reverse pass: its backward, and each gradient it returns added to its input's
// (a leaf's .grad, or the producing node's grad_out). A node not on a path to the loss is skipped.
void run_node(Node& node, std::optional<FiniteChecks>& checks) {
    if (!node.grad_out.defined()) return;
    std::vector<Tensor> grads = node.backward(node.grad_out);
    DT_CHECK(grads.size() == node.inputs.size(), "backward of ", node.name, " returned ",
             grads.size(), " gradients for ", node.inputs.size(), " inputs");
    node.grad_out = Tensor();                  // free as soon as it is consumed
    if (TraceSink* trace = current_trace()) {  // every gradient the op hands back
        for (std::size_t i = 0; i < grads.size(); ++i) {
            if (!grads[i].defined()) continue;
            const std::string* name = trace->name_of(node.inputs[i]);
            trace->add("backward", node.name,
                       name ? "grad " + *name : "grad input " + std::to_string(i), grads[i]);
        }
    }
    for (std::size_t i = 0; i < grads.size(); ++i) {
        const Tensor& in = node.inputs[i];
        if (!grads[i].defined() || !in.defined() || !in.requires_grad()) continue;
        if (checks) checks->add(grads[i], node, i, in, /*summed=*/false);
        if (in.is_leaf()) {
            // A leaf's .grad() is handed to optimizers and users: never let two leaves
            // share one buffer (add's backward returns the same dy for both inputs).
            const bool first = !in.impl().grad;
            add_into(in.impl().grad, first ? grads[i].clone() : grads[i], in, node.name);
            if (!first && checks) checks->add(in.grad(), node, i, in, /*summed=*/true);
        } else {
            auto& slot = in.impl().grad_fn->grad_out;
            std::shared_ptr<TensorImpl> s = slot.impl_ptr();
            const bool first = !s;
            add_into(s, grads[i], in, node.name);
            slot = Tensor(s);
            if (!first && checks) checks->add(slot, node, i, in, /*summed=*/true);
        }
    }
    node.backward = nullptr;  // release saved tensors early
    node.inputs.clear();
}

}  // namespace

bool grad_enabled() { return t_grad_enabled; }

void set_check_finite(bool on) { t_check_finite = on; }
bool check_finite() { return t_check_finite; }

LeafFinalHook::LeafFinalHook(std::function<void(const Tensor&)> fn)
    : fn_(std::move(fn)), previous_(t_leaf_final) {
    t_leaf_final = this;
}
LeafFinalHook::~LeafFinalHook() { t_leaf_final = previous_; }

NoGradGuard::NoGradGuard() : previous_(t_grad_enabled) { t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { t_grad_enabled = previous_; }

bool needs_grad(const std::vector<Tensor>& inputs) {
    if (!t_grad_enabled) return false;
    for (const Tensor& t : inputs) {
        if (t.defined() && t.requires_grad()) return true;
    }
    return false;
}

void record(Tensor& out, const std::string& name, std::vector<Tensor> inputs, BackwardFn fn) {
    auto node = std::make_shared<Node>();
    node->name = name;
    node->inputs = std::move(inputs);
    node->backward = std::move(fn);
    out.impl().requires_grad = true;
    out.impl().grad_fn = node;
    if (TraceSink* trace = current_trace()) trace->add("forward", node->name, "output", out);
    t_tape.nodes.push_back(std::move(node));
}

Tensor accumulate(const Tensor& acc, const Tensor& g) {
    Tensor out = Tensor::empty(acc.shape(), DType::kF32, acc.device());
    // ORDER: one add per element, acc on the left; no reduction happens here (the add kernel of
    // the device's table: residual branches meet here on every block).
    device_kernels(acc.device()).add_forward(acc.f32(), g.f32(), out.f32(), acc.numel());
    return out;
}

void backward(const Tensor& loss) {
    DT_CHECK(loss.numel() == 1, "backward() needs a one-element loss, got ", loss.str());
    backward(loss, Tensor::full(loss.shape(), 1.0f, loss.device()));
}

void backward(const Tensor& loss, const Tensor& grad_output) {
    DT_CHECK(loss.requires_grad(), "backward(): the loss does not depend on any tensor that "
             "requires a gradient (hint: set_requires_grad(true) on the parameters, and do not "
             "compute the loss under a NoGradGuard)");
    DT_CHECK(grad_output.defined() && grad_output.shape() == loss.shape() &&
                 grad_output.device() == loss.device(),
             "backward(): the gradient of ", loss.str(), " must have its shape and device, got ",
             grad_output.defined() ? grad_output.str() : std::string("undefined"));
    Tensor seed = grad_output;
    if (loss.is_leaf()) {
        add_into(loss.impl().grad, seed, loss, "backward");
        return;
    }
    loss.impl().grad_fn->grad_out = seed;
    // Walk a snapshot so the tape can be cleared even if a closure throws.
    std::vector<std::shared_ptr<Node>> nodes;
    nodes.swap(t_tape.nodes);
    std::optional<FiniteChecks> checks;
    if (t_check_finite) checks.emplace(loss.device());
    LeafFinalHook* const hook = t_leaf_final;
    std::vector<std::vector<Tensor>> final_after;
    if (hook != nullptr) final_after = leaves_final_after(nodes);
    for (std::size_t k = nodes.size(); k-- > 0;) {
        run_node(*nodes[k], checks);
        if (hook != nullptr)
            for (const Tensor& leaf : final_after[k]) hook->fn_(leaf);
    }
    if (checks) checks->report();
}

std::size_t tape_size() { return t_tape.nodes.size(); }

void clear_tape() {
    t_tape.nodes.clear();
}

}  // namespace dt::autograd

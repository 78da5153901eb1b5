// SPDX-License-Identifier: MIT
// The accumulation-mode tester: the checks every reduction site's kernel must pass, written once,
// and each kernel's entry as data (XNNPACK's tester pattern). An entry names the kernel, its
// shapes, how to make its inputs, how to call it through a device's kernel table, the mode's
// recipe written plainly, the double reference with each mode's bound, and how a permutation of
// the samples moves its inputs and outputs. The checks (op_modes_test.cpp), one test per check,
// kernel, mode and device:
//   Recipe      every mode equals its recipe bit for bit, on every ISA the CPU has (atomic at
//               one thread: its partials in index order); the special shapes' inputs too;
//   Bound       every mode within c * eps32 * (the same sum over |terms|) of the double reference
//               (or within the entry's own `bounds`);
//   Threads     tree, kahan, exact, permuted give the same bits at 1, 2, 3, 4 and 7 threads and
//               on every ISA;
//   ModeFree    the outputs an entry names mode-free on a shape are the tree's bits in every
//               mode, atomic too, at 1, 2 and 4 threads;
//   SampleOrder exact gives the same bits, outputs moved with the samples, when they are
//               permuted, and equals its recipe; tree's bits change (they depend on the order)
//               where an output sums over samples, and move with them where none does;
//   Kahan       kahan within Neumaier's bound on ill-conditioned sums, and closer than tree;
//   Key         permuted replays its key and varies with it;
//   Atomic      under contention (5 calls at 2 and 4 threads) within the bound on every call;
//               the elements with at most two partials, which commute, have the recipe's bits.
// Devices: cpu (dt_test_kernels) and cuda (dt_test_cuda: a GPU, or hostcuda's emulated one; the
// checks skip, saying so, without either). On cuda, Threads does not apply and atomic's bits are
// not the cpu's partials: its Recipe and settled elements are not checked there.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/common/accum_mode.h"
#include "kernels/kernel_table.h"

namespace dt::test {

using kernels::common::AccumMode;  // every entry's vocabulary
using kernels::common::AccumSpec;
using Floats = std::vector<std::vector<float>>;    // a kernel's inputs or outputs, in order
using Doubles = std::vector<std::vector<double>>;  // the reference's outputs
using Settled = std::vector<std::vector<char>>;    // per output element: atomic's bits fixed

/// The inputs an entry makes: uniform in [-1, 1) (or the entry's usual range); ill-conditioned
/// (the Kahan check's: values over many binades, cancelling); special (wide ranges, subnormals,
/// signed zeros, infinities: the Recipe check on `special_shapes`).
enum class Inputs { kUniform, kIll, kSpecial };

/// One kernel call's memory on the device a case runs on, and that device's kernel table. An
/// entry's `call` copies its inputs in, asks for its outputs (every element 9, so that a kernel
/// must write each) and calls the table; the tester reads the outputs back in the order asked.
class DeviceCall {
 public:
    virtual ~DeviceCall() = default;
    virtual const kernels::KernelTable& table() const = 0;
    virtual const float* in(const std::vector<float>& v) = 0;
    /// Index inputs (argmax, labels) carried as floats in Floats, converted here.
    virtual const int32_t* in_i32(const std::vector<float>& v) = 0;
    virtual const int64_t* in_i64(const std::vector<float>& v) = 0;
    virtual float* out(int64_t n) = 0;
    virtual Floats results() = 0;
};

/// One reduction site's kernel, as the checks need it. Shapes are indices into `shapes`.
struct ModesEntry {
    std::string kernel;               // the kernel table's name (kernels/op_list.inc)
    std::vector<std::string> shapes;  // a description of each shape, for traces
    /// The kernel's inputs on shape s, keyed by tag.
    std::function<Floats(int s, uint32_t tag, Inputs kind)> inputs;
    /// Calls the kernel on shape s under `spec` through d (its outputs: d.out, in order).
    std::function<void(int s, const Floats& in, AccumSpec spec, DeviceCall& d)> call;
    /// The mode's recipe written plainly (atomic: its partials added in index order).
    std::function<Floats(int s, const Floats& in, AccumSpec spec)> recipe;
    /// The double reference of the outputs; with `magnitudes`, over |terms| (the bound's scale).
    /// An empty vector for an output: no bound here (one no mode changes, bounded by the
    /// kernel's own test; ModeFree pins it to the tree's bits).
    std::function<Doubles(int s, const Floats& in, bool magnitudes)> reference;
    /// c of the mode's bound c * eps32 * magnitude on shape s.
    std::function<double(int s, AccumMode mode)> bound;
    /// Instead of `bound`, where no one c fits: each output element's bound in the mode (errors
    /// carried through later formulas, as batch norm's from the mean into var and invstd).
    std::function<Doubles(int s, const Floats& in, AccumMode mode)> bounds;
    /// Terms of one output element on shape s (Neumaier's bound: eps |S| + 2 m eps^2 sum|x|).
    std::function<int64_t(int s)> terms;
    /// The Kahan check's reference when the kernel's terms are not the inputs (a product, a
    /// normalised value): the sums of its own float terms, in long double. Unset: `reference`.
    std::function<Doubles(int s, const Floats& in)> ill_reference;
    /// The inputs with sample j taken from sample order[j], and what the outputs become then.
    std::function<Floats(int s, const Floats& in, const std::vector<int64_t>& order)> permute;
    std::function<Floats(int s, const Floats& out, const std::vector<int64_t>& order)> permuted;
    std::function<int64_t(int s)> samples;
    /// False when no output sums over samples (a dgrad): then tree's bits move with them too.
    bool crosses_samples = true;
    /// The output elements whose atomic bits are the recipe's (at most two partials).
    std::function<Settled(int s, const Floats& in)> atomic_settled;
    /// The outputs whose bits no mode changes on shape s (empty: none).
    std::function<std::vector<int>(int s)> mode_free;
    // Which shapes each check uses (Recipe, Bound and ModeFree: every shape but the atomic-only
    // ones, contention shapes too large to redo in every mode; Atomic bounds every call there).
    std::vector<int> thread_shapes, order_shapes, atomic_shapes, special_shapes;
    std::vector<int> atomic_only_shapes;
    int ill_shape = 0, key_shape = 0;
    /// Of keys 8 .. 12, how many must give other bits than key 7 (a single output may not).
    int key_min_differ = 5;
};

/// Every output element settled (or none): the common case of atomic_settled.
Settled settled_all(const Floats& outputs_like, bool settled);

/// Every entry, in the kernel table's order (one *_entry.cpp each).
const std::vector<ModesEntry>& modes_entries();

ModesEntry bias_add_backward_entry();
ModesEntry linear_backward_weight_entry();
ModesEntry linear_backward_data_entry();
ModesEntry conv2d_backward_data_entry();
ModesEntry conv2d_backward_weight_entry();
ModesEntry batchnorm2d_stats_entry();
ModesEntry batchnorm2d_backward_entry();
ModesEntry embedding_backward_entry();
ModesEntry layer_norm_forward_entry();
ModesEntry layer_norm_backward_entry();
ModesEntry attention_forward_entry();
ModesEntry attention_backward_entry();
ModesEntry maxpool2d_backward_entry();
ModesEntry avgpool2d_backward_entry();
ModesEntry softmax_xent_forward_entry();
ModesEntry grad_norm_sq_each_entry();

}  // namespace dt::test

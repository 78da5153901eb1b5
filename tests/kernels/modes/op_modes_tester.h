// SPDX-License-Identifier: MIT
// The accumulation-mode tester: the checks every reduction site's kernel must pass, written once,
// and each kernel's entry as data (XNNPACK's tester pattern). An entry names the kernel, its
// shapes, how to make its inputs, how to run it under a mode, the mode's recipe written plainly,
// the double reference with each mode's bound, and how a permutation of the samples moves its
// inputs and outputs. The checks (op_modes_test.cpp), one test per kernel and mode:
//   Recipe      kahan, exact, permuted equal their recipe bit for bit;
//   Bound       every mode within c * eps32 * (the same sum over |terms|) of the double reference;
//   Threads     tree, kahan, exact, permuted give the same bits at 1, 2, 3, 4 and 7 threads;
//   SampleOrder exact gives the same bits, outputs moved with the samples, when they are
//               permuted, and equals its recipe; tree's bits change (they depend on the order);
//   Kahan       kahan within Neumaier's bound on ill-conditioned sums, and closer than tree;
//   Key         permuted replays its key and varies with it;
//   Atomic      under contention (5 calls at 2 and 4 threads) within the bound on every call;
//               where every element has at most two partials, which commute, the recipe's bits.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kernels/common/accum_mode.h"

namespace dt::test {

using Floats = std::vector<std::vector<float>>;    // a kernel's inputs or outputs, in order
using Doubles = std::vector<std::vector<double>>;  // the reference's outputs

/// One reduction site's kernel, as the checks need it. Shapes are indices into `shapes`.
struct ModesEntry {
    std::string kernel;               // the kernel table's name (kernels/op_list.inc)
    std::vector<std::string> shapes;  // a description of each shape, for traces
    /// The kernel's inputs on shape s, uniform in [-1, 1) keyed by tag; ill: values over many
    /// binades with alternating signs (the Kahan check's).
    std::function<Floats(int s, uint32_t tag, bool ill)> inputs;
    /// The kernel's outputs on shape s under `spec`.
    std::function<Floats(int s, const Floats& in, kernels::common::AccumSpec spec)> run;
    /// The mode's recipe written plainly (kahan, exact, permuted; atomic with its partials added
    /// in index order, the bits of every order when there are at most two).
    std::function<Floats(int s, const Floats& in, kernels::common::AccumSpec spec)> recipe;
    /// The double reference of the outputs; with `magnitudes`, over |terms| (the bound's scale).
    std::function<Doubles(int s, const Floats& in, bool magnitudes)> reference;
    /// c of the mode's bound c * eps32 * magnitude on shape s.
    std::function<double(int s, kernels::common::AccumMode mode)> bound;
    /// Terms of one output element on shape s (Neumaier's bound: eps |S| + 2 m eps^2 sum|x|).
    std::function<int64_t(int s)> terms;
    /// The inputs with sample j taken from sample order[j], and what the outputs become then.
    std::function<Floats(int s, const Floats& in, const std::vector<int64_t>& order)> permute;
    std::function<Floats(int s, const Floats& out, const std::vector<int64_t>& order)> permuted;
    std::function<int64_t(int s)> samples;
    /// At most two partials per output element in the atomic mode: its bits are the recipe's.
    std::function<bool(int s)> atomic_commutes;
    // Which shapes each check uses (Recipe and Bound: every shape).
    std::vector<int> thread_shapes, order_shapes, atomic_shapes;
    int ill_shape = 0, key_shape = 0;
};

/// Every entry (op_modes_entries.cpp).
const std::vector<ModesEntry>& modes_entries();

}  // namespace dt::test

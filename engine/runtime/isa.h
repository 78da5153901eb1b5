// SPDX-License-Identifier: MIT
// The CPU instruction set the engine's GEMM and convolution kernels run on (the one ISA module,
// kernels/cpu_isa.h, as the engine exposes it beside the thread count). The path in force is
// process-wide: the environment variable DT_ISA names one at start-up, set_cpu_isa changes it.
// The kernels compiled per path (the Adam update, the non-finite scan, linear's wgrad leaves and
// kahan loops, the exact row sums) follow the same path (isa_dispatched_kernels).
// Results never depend on the choice: every path computes the same ORDER.
#pragma once
#include <string>
#include <vector>

#include "kernels/cpu_isa.h"

namespace dt {

using kernels::CpuIsa;

/// "scalar", "avx2", "avx512".
const char* cpu_isa_name(CpuIsa isa);
/// The path named `name`; throws ValueError listing the names when it is none of them.
CpuIsa cpu_isa_from_name(const std::string& name);
/// True when this CPU can run `isa` (avx2 needs AVX2 and FMA; avx512 needs AVX-512F and DQ).
bool cpu_isa_supported(CpuIsa isa);
/// The paths this CPU can run, scalar first.
std::vector<CpuIsa> supported_cpu_isas();
/// The path in force.
CpuIsa cpu_isa();
/// Puts `isa` in force; throws ValueError naming the paths this CPU has when it lacks `isa`.
void set_cpu_isa(CpuIsa isa);

/// A CPU kernel function compiled per path: its name and the path its last call took ("" before
/// any call). Every one follows the path in force.
struct IsaDispatchedKernel {
    std::string name, last_path;
};
std::vector<IsaDispatchedKernel> isa_dispatched_kernels();

/// Puts a path in force for its lifetime and restores the previous one (tests, benchmarks).
class ScopedCpuIsa {
 public:
    explicit ScopedCpuIsa(CpuIsa isa) : previous_(cpu_isa()) { set_cpu_isa(isa); }
    ~ScopedCpuIsa() { set_cpu_isa(previous_); }
    ScopedCpuIsa(const ScopedCpuIsa&) = delete;
    ScopedCpuIsa& operator=(const ScopedCpuIsa&) = delete;

 private:
    CpuIsa previous_;
};

}  // namespace dt

// SPDX-License-Identifier: MIT
// Tests that run a check on every CPU ISA path this machine has (kernels/cpu_isa.h).
#pragma once
#include <gtest/gtest.h>

#include "kernels/cpu_isa.h"

namespace dt::test {

/// fn() once per ISA path this CPU can run, with that path in force and named in the trace;
/// the path in force before is put back.
template <class Fn>
void for_each_cpu_isa(Fn fn) {
    const kernels::CpuIsa saved = kernels::cpu::cpu_isa();
    for (kernels::CpuIsa isa : kernels::kCpuIsas) {
        if (!kernels::cpu::cpu_isa_set(isa)) continue;
        SCOPED_TRACE(kernels::cpu::cpu_isa_name(isa));
        fn();
    }
    kernels::cpu::cpu_isa_set(saved);
}

}  // namespace dt::test

// SPDX-License-Identifier: MIT
// DT_ISA_VARIANTS: a CPU kernel function compiled once per path of kernels/cpu_isa.h (AVX-512,
// AVX2 with FMA, the baseline) and dispatched per call on cpu_isa(), the path in force. So
// --isa and DT_ISA govern these functions as they govern the GEMM. Write the body once as
// `DT_ISA_BODY ret name_body(params)`; the macro defines name_avx512, name_avx2 (the body
// inlined into a function compiled for that path) and `ret name(params)`, which calls the one
// in force and records it (isa_variant_uses: the test hook and `detrain info`). Every body is
// written to give the same bits on every path (no reordering, -ffp-contract=off): the choice
// changes speed only. Private to kernels/cpu.
#pragma once
#include <atomic>
#include <string>
#include <vector>

#include "kernels/cpu_isa.h"

namespace dt::kernels::cpu {

/// One dispatched function: its name and the path its last call took (-1 before any call).
struct IsaVariantUse {
    const char* name;
    std::atomic<int> last{-1};
    explicit IsaVariantUse(const char* n);  // registers it for isa_variant_uses
    void took(CpuIsa isa) { last.store(static_cast<int>(isa), std::memory_order_relaxed); }
};

/// Every dispatched function of the CPU kernels, in registration order.
const std::vector<const IsaVariantUse*>& isa_variant_uses();

}  // namespace dt::kernels::cpu

#define DT_ISA_BODY __attribute__((always_inline)) inline

#if defined(__x86_64__)
// DT_ISA_VARIANTS_WITH(attrs, ...): the paths' functions get `attrs` (e.g. flatten) too.
#define DT_ISA_VARIANTS_WITH(attrs, ret, name, params, args)                                      \
    __attribute__((target("avx512f,avx512dq,avx2,fma"))) attrs ret name##_avx512 params {         \
        return name##_body args;                                                                  \
    }                                                                                             \
    __attribute__((target("avx2,fma"))) attrs ret name##_avx2 params { return name##_body args; } \
    ::dt::kernels::cpu::IsaVariantUse name##_use(#name);                                          \
    ret name params {                                                                             \
        const ::dt::kernels::CpuIsa isa = ::dt::kernels::cpu::cpu_isa();                          \
        name##_use.took(isa);                                                                     \
        if (isa == ::dt::kernels::CpuIsa::kAvx512) return name##_avx512 args;                     \
        if (isa == ::dt::kernels::CpuIsa::kAvx2) return name##_avx2 args;                         \
        return name##_body args;                                                                  \
    }
#define DT_ISA_VARIANTS(ret, name, params, args) DT_ISA_VARIANTS_WITH(, ret, name, params, args)
// The same with every call inside each path's function inlined into it (GCC's flatten), so
// inline helpers shared with the CUDA kernels (their fmaf among them) compile for that path too:
// for bodies whose work is in such helpers and lambdas.
#define DT_ISA_FLAT_VARIANTS(ret, name, params, args) \
    DT_ISA_VARIANTS_WITH(__attribute__((flatten)), ret, name, params, args)
#else
#define DT_ISA_FLAT_VARIANTS(ret, name, params, args) DT_ISA_VARIANTS(ret, name, params, args)
#define DT_ISA_VARIANTS(ret, name, params, args)         \
    ::dt::kernels::cpu::IsaVariantUse name##_use(#name); \
    ret name params {                                    \
        name##_use.took(::dt::kernels::CpuIsa::kScalar); \
        return name##_body args;                         \
    }
#endif

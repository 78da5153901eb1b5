// SPDX-License-Identifier: MIT
// The CPU instruction-set paths (kernels/cpu_isa.h): what this machine supports, the path in
// force (DT_ISA or the best one) and forcing one. Every path computes the same ORDER, so the
// choice changes speed, never bits.
#include "kernels/cpu_isa.h"
#include "kernels/cpu/isa_variants.h"

#include <atomic>
#include <vector>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#define DT_CPU_X86 1
#endif

namespace dt::kernels::cpu {

namespace {

CpuIsa initial_isa() {
    CpuIsa isa;
    if (const char* env = std::getenv("DT_ISA")) {
        if (cpu_isa_from_name(env, &isa) && cpu_isa_supported(isa)) return isa;
    }
    return cpu_isa_best();
}

std::atomic<int> g_isa{-1};

}  // namespace

const char* cpu_isa_name(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::kScalar: return "scalar";
        case CpuIsa::kAvx2: return "avx2";
        case CpuIsa::kAvx512: return "avx512";
    }
    return "?";
}

bool cpu_isa_from_name(const char* name, CpuIsa* isa) {
    for (CpuIsa i : kCpuIsas) {
        if (std::strcmp(name, cpu_isa_name(i)) == 0) {
            *isa = i;
            return true;
        }
    }
    return false;
}

bool cpu_isa_supported(CpuIsa isa) {
    switch (isa) {
        case CpuIsa::kScalar: return true;
#if DT_CPU_X86
        case CpuIsa::kAvx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        case CpuIsa::kAvx512:
            return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#else
        default: return false;
#endif
    }
    return false;
}

CpuIsa cpu_isa_best() {
    if (cpu_isa_supported(CpuIsa::kAvx512)) return CpuIsa::kAvx512;
    if (cpu_isa_supported(CpuIsa::kAvx2)) return CpuIsa::kAvx2;
    return CpuIsa::kScalar;
}

CpuIsa cpu_isa() {
    int v = g_isa.load(std::memory_order_relaxed);
    if (v < 0) {
        v = static_cast<int>(initial_isa());
        g_isa.store(v, std::memory_order_relaxed);
    }
    return static_cast<CpuIsa>(v);
}

bool cpu_isa_set(CpuIsa isa) {
    if (!cpu_isa_supported(isa)) return false;
    g_isa.store(static_cast<int>(isa), std::memory_order_relaxed);
    return true;
}

namespace {
std::vector<const IsaVariantUse*>& registry() {
    static std::vector<const IsaVariantUse*> uses;  // filled while the program loads
    return uses;
}
}  // namespace

IsaVariantUse::IsaVariantUse(const char* n) : name(n) { registry().push_back(this); }

const std::vector<const IsaVariantUse*>& isa_variant_uses() { return registry(); }

std::vector<IsaDispatch> isa_dispatches() {
    std::vector<IsaDispatch> v;
    for (const IsaVariantUse* u : registry())
        v.push_back(IsaDispatch{u->name, u->last.load(std::memory_order_relaxed)});
    return v;
}

}  // namespace dt::kernels::cpu

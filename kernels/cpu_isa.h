// SPDX-License-Identifier: MIT
// The CPU instruction-set paths: the one module that knows which paths exist, what this machine
// supports, and which is in force. Every CPU kernel with paths takes the one in force at run
// time, per call: cpu::gemm and every kernel built on it (the convolutions in all modes,
// linear's GEMMs, the conv2d wgrad column gathers, the max-pool fast path), and the functions
// compiled per path by DT_ISA_VARIANTS (kernels/cpu/isa_variants.h: the Adam update, the
// non-finite scan, linear's per-sample wgrad leaves and its kahan loops, the exact row sums).
// Every path computes the same ORDER, so the choice changes speed, never bits.
// The engine exposes this module as engine/runtime/isa.h (apps use that).
#pragma once
#include <vector>

namespace dt::kernels {

/// Instruction-set paths of the CPU kernels (all give the same bits).
enum class CpuIsa : int { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

/// Every path, from the most portable to the widest.
inline constexpr CpuIsa kCpuIsas[] = {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512};

namespace cpu {
/// "scalar", "avx2", "avx512".
const char* cpu_isa_name(CpuIsa isa);
/// The path named `name` ("scalar", "avx2", "avx512"); false when the name is none of them.
bool cpu_isa_from_name(const char* name, CpuIsa* isa);
/// True when this machine can run `isa` (avx2: AVX2 and FMA; avx512: AVX-512F and DQ).
bool cpu_isa_supported(CpuIsa isa);
/// The widest path this machine supports.
CpuIsa cpu_isa_best();
/// The path in force. Default: the one named by the environment variable DT_ISA when it is
/// supported, else cpu_isa_best().
CpuIsa cpu_isa();
/// Puts a path in force (process-wide); returns false and changes nothing if unsupported.
bool cpu_isa_set(CpuIsa isa);

/// A function compiled per path (DT_ISA_VARIANTS): its name and the path its last call took
/// (-1 before any call). The test hook that shows the path in force governs it.
struct IsaDispatch {
    const char* name;
    int last;
};
/// Every such function of the CPU kernels.
std::vector<IsaDispatch> isa_dispatches();
}  // namespace cpu

}  // namespace dt::kernels

// SPDX-License-Identifier: MIT
// The CPU instruction-set paths: the one module that knows which paths exist, what this machine
// supports, and which is in force. The path in force is taken at run time (per call) by cpu::gemm
// and every kernel built on it: the convolutions (all modes), linear's GEMMs, the conv2d wgrad
// column gathers and the max-pool fast path. Kernels marked DT_TARGET_CLONES (the Adam update,
// the non-finite scan, linear's per-sample wgrad leaves and its kahan loops, the exact row sums)
// instead pick their vector variant once, when the program loads, from what the CPU has.
// Every path and variant computes the same ORDER, so the choice changes speed, never bits.
// The engine exposes this module as engine/runtime/isa.h (apps use that).
#pragma once

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
/// True when this machine can run `isa` (avx2: AVX2 and FMA; avx512: AVX-512F).
bool cpu_isa_supported(CpuIsa isa);
/// The widest path this machine supports.
CpuIsa cpu_isa_best();
/// The path in force. Default: the one named by the environment variable DT_ISA when it is
/// supported, else cpu_isa_best().
CpuIsa cpu_isa();
/// Puts a path in force (process-wide); returns false and changes nothing if unsupported.
bool cpu_isa_set(CpuIsa isa);
}  // namespace cpu

}  // namespace dt::kernels

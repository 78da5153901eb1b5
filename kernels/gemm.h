// SPDX-License-Identifier: MIT
// Contract of the GEMM kernels: C (M, N) = op(A) (M, K) . op(B) (K, N), row-major, leading dims.
//
// ORDER (the numeric recipe "gemm_f32_k_fma"): every C element is
//   acc = +0 (or C's old value when accumulating); for k = 0 .. K-1: acc = fma(a[i,k], b[k,j], acc)
// one fused multiply-add per term (the product is not rounded on its own; std::fma on the scalar
// path, vfmadd on AVX2+FMA and AVX-512, all correctly rounded, so all agree). Vector paths widen
// over N (and tile over M) only; K is never split or reordered (K blocks carry the partial sum through C in order),
// so the scalar, AVX2 and AVX-512 paths and every thread count give identical bits.
// Because acc starts at +0, a result is never -0 for K >= 1.
// Reference: ref::gemm (double accumulation, same indexing).
#pragma once
#include <cstdint>

#include "kernels/cpu_isa.h"

namespace dt::kernels {

struct GemmParams {
    int64_t m = 0, n = 0, k = 0;
    int64_t lda = 0, ldb = 0, ldc = 0;  // 0: dense (the row length of the stored matrix)
    bool trans_a = false;     // a stores A^T as (K, M): A[i,k] = a[k * lda + i]
    bool trans_b = false;     // b stores B^T as (N, K): B[k,j] = b[j * ldb + k]
    bool accumulate = false;  // acc starts from C's old value instead of +0
    bool parallel = true;     // may use OpenMP over blocks of C (bits never depend on it)
};

/// Leading dimensions with the 0 = dense default resolved.
inline int64_t gemm_lda(const GemmParams& p) { return p.lda ? p.lda : (p.trans_a ? p.m : p.k); }
inline int64_t gemm_ldb(const GemmParams& p) { return p.ldb ? p.ldb : (p.trans_b ? p.k : p.n); }
inline int64_t gemm_ldc(const GemmParams& p) { return p.ldc ? p.ldc : p.n; }

/// A B operand that packs itself (implicit GEMM, e.g. im2col on the fly): pack(ctx, k0, kc, j0,
/// nr, pw, dst) writes B[k0 + k, j0 + j] to dst[k * pw + j] for k < kc, j < nr, and +0 for
/// nr <= j < pw. Values only; the ORDER of the product does not change.
struct GemmBSource {
    void (*pack)(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nr, int64_t pw,
                 float* dst) = nullptr;
    const void* ctx = nullptr;
};

/// K-block depth of cpu::gemm (part of the packed A layout below).
constexpr int64_t kGemmKc = 256;

/// A B operand given by its rows: B[k, j] = rows[k][j] (K row pointers, each to N floats). Rows
/// are read in place (e.g. overlapping windows of one padded image), only a last partial panel
/// is copied.
struct GemmBRows {
    const float* const* rows = nullptr;
};

/// A packed once by gemm_pack_a and reused by many GEMMs with the same A (as MKL's sgemm_pack):
/// valid for the m, k, lda, trans_a it was packed with; computed on the ISA path it was packed for.
struct GemmPackedA {
    const float* data = nullptr;
    CpuIsa isa = CpuIsa::kScalar;
};

namespace ref {
inline void gemm(const double* a, const double* b, double* c, const GemmParams& p);
}  // namespace ref

namespace cpu {
/// C = op(A) op(B) (or C += ..., see ORDER above). a: (M,K) or (K,M); b: (K,N) or (N,K); c: (M,N).
void gemm(const float* a, const float* b, float* c, const GemmParams& p);

/// Same with B produced by a source (p.trans_b and p.ldb are ignored).
void gemm(const float* a, const GemmBSource& b, float* c, const GemmParams& p);
/// Same with B given by rows (p.trans_b and p.ldb are ignored).
void gemm(const float* a, const GemmBRows& b, float* c, const GemmParams& p);
/// Same with a pre-packed A (p.trans_a and p.lda are ignored).
void gemm(const GemmPackedA& a, const float* b, float* c, const GemmParams& p);
void gemm(const GemmPackedA& a, const GemmBSource& b, float* c, const GemmParams& p);
void gemm(const GemmPackedA& a, const GemmBRows& b, float* c, const GemmParams& p);
/// Packed A layout (written by gemm_pack_a): MR = gemm_tile_rows(isa), Mpad = p.m rounded up to
/// MR; for each K block pc = 0, kGemmKc, ... of depth kc = min(kGemmKc, p.k - pc), the panel of
/// rows [i0, i0+MR) sits at data + pc*Mpad + i0*kc, k-major: A[i0+r, pc+k] at + k*MR + r;
/// rows p.m .. Mpad-1 are +0.
int64_t gemm_tile_rows(CpuIsa isa);
/// Floats a packed A of (p.m, p.k) needs on path `isa` (Mpad * p.k).
int64_t gemm_packed_a_size(CpuIsa isa, const GemmParams& p);
/// Packs A (p.m, p.k, p.lda, p.trans_a) for path `isa` into buffer (gemm_packed_a_size floats).
GemmPackedA gemm_pack_a(CpuIsa isa, const float* a, float* buffer, const GemmParams& p);
}  // namespace cpu

namespace cuda {  // kernels/cuda/linear.cu: the same chains, as a tiled block program
void gemm(const float* a, const float* b, float* c, const GemmParams& p);
}  // namespace cuda

}  // namespace dt::kernels

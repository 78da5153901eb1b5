// SPDX-License-Identifier: MIT
// Contract of the 2-D batch-normalisation kernels. x, y, dy, dx are (N, C, HW) (HW = H*W,
// contiguous); mean, var, invstd, gamma, beta, running stats, dgamma, dbeta are (C).
//
// Numeric recipe (sites bn.stats and bn.backward; the AccumSpec `accum` in the Params selects
// how every per-channel total below accumulates, see "Accumulation modes"):
//   term         = x (mean pass), (x - mean)^2 (variance pass), dy and dy * xhat (backward)
//   total(c)     = the accumulation of term(n, c, i) over all samples n and positions i < HW
//   mean         = total(x) / count,  var = total((x - mean)^2) / count  (biased, two passes)
//   invstd       = 1 / sqrt(var + eps)                                      count = N*HW as float
//   y            = ((x - mean) * invstd) * gamma + beta    (xhat first, then scale, then shift)
//   running_mean = (1 - m) * running_mean + m * mean       ((1 - m) rounded once, left to right)
//   running_var  = (1 - m) * running_var + m * (var * (count / (count - 1)))
//   dbeta        = total(dy),  dgamma = total(dy * xhat),  xhat = (x - mean) * invstd (recomputed)
//   training dx  = ((gamma * invstd) / count) * (((count * dy) - dbeta) - xhat * dgamma)
//   eval dx      = dy * (gamma * invstd)
// Accumulation modes (one spec per kernel call; the same spec drives both sums of the call:
// the mean and variance passes of stats, the dy and dy*xhat sums of backward):
//   kTree      leaf(n, c) = sum over i < HW of term from +0 in index order            // ORDER
//              total(c)   = T(leaf(0, c), ..., leaf(N-1, c))  (reduce_tree.h, one leaf per sample)
//   kKahan     leaf(n, c) = kahan_add of term(n, c, 0), term(n, c, 1), ... from (+0, +0)
//              total(c)   = kahan_value(T_k(leaf(0, c), ..., leaf(N-1, c))), T_k = the same
//              left-complete tree with kahan_merge (kahan_tree_push/finish, accum_kahan.h)
//   kExact     total(c)   = exact_value of the exact sum of every single term(n, c, i) (elements,
//              not leaves; ExactAcc, accum_exact.h): independent of order and partition, so
//              permuting the samples of the batch changes no bit of mean, var, dgamma, dbeta
//   kAtomic    leaf(n, c) as kTree, computed in parallel; each thread atomic-adds its leaves
//              into the zeroed total(c) (atomic_add.h). Nondeterministic with 2+ threads (the
//              CPU row loop is parallel from N*C*HW >= 32768; below that it adds in row order)
//   kPermuted  leaf(n, c) as kTree; total(c) = +0 + leaf(o[0], c) + leaf(o[1], c) + ... with
//              o = permute_order(N, accum.permute_key) (accum_permuted.h): ONE order per call,
//              used for every channel and for both sums of the call
// Only the accumulation of the totals changes with the mode; the terms and every elementwise
// formula are the same in all modes.
// The CPU kernel sums 8 rows (n, c) at once, each in its own accumulator, for instruction-level
// parallelism (kahan: 4 rows in the lanes of a 4-float vector); the order inside every row is
// unchanged. Its exact mode feeds each (channel, block of samples) to exact_add_lanes
// (kernels/exact_rows.h: int64 lane sums folded once into the ExactAcc; the same exact value).
#pragma once
#include <cstdint>

#include "kernels/common/accum_exact.h"
#include "kernels/common/accum_mode.h"

namespace dt::kernels {

/// The hook that completes per-channel totals over the parts of a batch split across processes
/// (ranks that run the same step at once; the engine's, engine/runtime/batch_split.cpp). Every
/// part calls it at the same point with its own totals and gets the totals over all parts back
/// in place: `exact` for the exact mode's unrounded accumulators (integer sums: any partition
/// gives the same bits), `floats` for the other modes' rounded totals (combined as `spec` says).
struct BatchNormParts {
    void* ctx = nullptr;
    void (*exact)(void* ctx, common::ExactAcc* accs, int64_t n) = nullptr;
    void (*floats)(void* ctx, float* totals, int64_t n, const common::AccumSpec& spec) = nullptr;
    int64_t n_total = 0;  // samples over all parts: count = n_total * HW
};

struct BatchNorm2dParams {
    int64_t N = 0, C = 0, HW = 0;  // x is (N, C, HW)
    float eps = 1e-5f;
    // bn.stats (batchnorm2d_stats) / bn.backward (batchnorm2d_backward); the other kernels
    // ignore it.
    common::AccumSpec accum = common::accum_spec(common::AccumMode::kTree);
    // A part of a larger batch (engine/runtime/batch_split.h). `parts` (host memory: the CUDA
    // kernels call the hook from the host, their totals copied through it): the statistics and
    // the backward's totals are those of the whole batch (every total completed by the hook;
    // count = parts->n_total * HW, also in update_running); dgamma and dbeta stay this part's
    // own totals (the gradient's share).
    const BatchNormParts* parts = nullptr;
    // bn.backward in the exact mode: this part's unrounded totals of dy * xhat and dy are ADDED
    // to exact_dgamma[c] and exact_dbeta[c] (initialised by the caller); dgamma and dbeta are
    // still written. On cuda, device memory.
    common::ExactAcc* exact_dgamma = nullptr;
    common::ExactAcc* exact_dbeta = nullptr;
};

/// The count of the statistics: (N over every part) * HW, as float.
inline float batchnorm2d_count(const BatchNorm2dParams& p) {
    return static_cast<float>((p.parts != nullptr ? p.parts->n_total : p.N) * p.HW);
}

namespace ref {
inline void batchnorm2d_stats(const double* x, double* mean, double* var, double* invstd,
                              const BatchNorm2dParams& p);
inline void batchnorm2d_invstd(const double* var, double* invstd, const BatchNorm2dParams& p);
inline void batchnorm2d_apply(const double* x, const double* mean, const double* invstd,
                              const double* gamma, const double* beta, double* y,
                              const BatchNorm2dParams& p);
inline void batchnorm2d_update_running(double* running_mean, double* running_var,
                                       const double* mean, const double* var, double momentum,
                                       const BatchNorm2dParams& p);
inline void batchnorm2d_backward(const double* dy, const double* x, const double* mean,
                                 const double* invstd, const double* gamma, double* dx,
                                 double* dgamma, double* dbeta, bool training,
                                 const BatchNorm2dParams& p);
}  // namespace ref

// The float kernels, one list for both backends: cpu:: (kernels/cpu/batchnorm2d/) and cuda::
// (kernels/cuda/batchnorm2d.cu: device pointers, the engine's stream).
//   batchnorm2d_stats           batch statistics (site bn.stats): mean, biased var and invstd
//                               per channel.
//   batchnorm2d_invstd          invstd = 1 / sqrt(var + eps) per channel (eval mode, from the
//                               running variance).
//   batchnorm2d_apply           y = ((x - mean) * invstd) * gamma + beta.
//   batchnorm2d_update_running  in-place running-statistics update with the unbiased variance
//                               (PyTorch semantics).
//   batchnorm2d_backward        dx, dgamma, dbeta (site bn.backward); `training` selects the
//                               batch-statistics dx formula.
#define DT_BATCHNORM2D_KERNELS                                                                     \
    void batchnorm2d_stats(const float* x, float* mean, float* var, float* invstd,                 \
                           const BatchNorm2dParams& p);                                            \
    void batchnorm2d_invstd(const float* var, float* invstd, const BatchNorm2dParams& p);          \
    void batchnorm2d_apply(const float* x, const float* mean, const float* invstd,                 \
                           const float* gamma, const float* beta, float* y,                        \
                           const BatchNorm2dParams& p);                                            \
    void batchnorm2d_update_running(float* running_mean, float* running_var, const float* mean,    \
                                    const float* var, float momentum, const BatchNorm2dParams& p); \
    void batchnorm2d_backward(const float* dy, const float* x, const float* mean,                  \
                              const float* invstd, const float* gamma, float* dx, float* dgamma,   \
                              float* dbeta, bool training, const BatchNorm2dParams& p);

namespace cpu {
DT_BATCHNORM2D_KERNELS
}  // namespace cpu

namespace cuda {
DT_BATCHNORM2D_KERNELS
}  // namespace cuda

#undef DT_BATCHNORM2D_KERNELS

}  // namespace dt::kernels

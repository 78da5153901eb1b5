// SPDX-License-Identifier: MIT
// Contract of the dropout kernels. x, y, dx, dy, mask are (N, D) (D = elements per sample).
//
// Mask recipe (pure function of the key, never of the batch position or of threads):
//   draw(n, q) = philox_draw(seed, RngStream::kDropout, index = (sample_ids[n] << 32) | q,
//                            sub = (epoch << 16) | layer)             (4 words per draw)
//   word(n, j) = draw(n, j / 4).v[j % 4]
//   dropped(n, j) iff uniform01(word(n, j)) < p;   mask = 0 if dropped, else 1
// so sample_id < 2^32, D < 2^34, epoch < 2^16, layer < 2^16 (checked by the op).
// Values: scale = 1 / (1 - p), computed once in float; y = kept ? x * scale : 0;
//         dx = kept ? dy * scale : 0.                                               // ORDER
#pragma once
#include <cstdint>

#include "kernels/common/hd.h"
#include "kernels/common/philox.h"

namespace dt::kernels {

struct DropoutParams {
    int64_t N = 0, D = 0;  // (N, D)
    float p = 0.0f;        // drop probability in [0, 1)
    uint64_t seed = 0;
    uint32_t sub = 0;      // (epoch << 16) | layer
};

/// The counter word `sub` of a dropout draw (epoch < 2^16, layer < 2^16).
inline uint32_t dropout_sub(uint64_t epoch, uint32_t layer) {
    return static_cast<uint32_t>(epoch << 16) | (layer & 0xffffu);
}

/// The float scale 1 / (1 - p) every implementation uses.
DT_HD float dropout_scale(float p) { return 1.0f / (1.0f - p); }

/// Draws per sample (groups of 4 elements, one Philox draw each).
DT_HD int64_t dropout_groups(const DropoutParams& p) { return (p.D + 3) / 4; }

/// The recipe for group g of all N * dropout_groups(p) (sample g / groups, elements 4 (g %
/// groups) ..): what cpu:: and cuda:: run per group (host-device).
DT_HD void dropout_forward_group(int64_t g, const float* x, const int64_t* sample_ids, float* y,
                                 uint8_t* mask, const DropoutParams& p, float scale) {
    using namespace dt::kernels::common;
    const int64_t groups = dropout_groups(p);
    const int64_t n = g / groups, q = g % groups;
    const uint64_t index = (static_cast<uint64_t>(sample_ids[n]) << 32) | static_cast<uint64_t>(q);
    const Philox4 r = philox_draw(p.seed, RngStream::kDropout, index, p.sub);
    const int64_t j0 = q * 4, j1 = j0 + 4 < p.D ? j0 + 4 : p.D;
    for (int64_t j = j0; j < j1; ++j) {
        const int64_t k = n * p.D + j;
        const bool dropped = uniform01(r.v[j - j0]) < p.p;
        mask[k] = dropped ? 0 : 1;
        y[k] = dropped ? 0.0f : x[k] * scale;  // ORDER: x * scale
    }
}

DT_HD float dropout_backward_element(float dy, uint8_t kept, float scale) {
    return kept ? dy * scale : 0.0f;  // ORDER: dy * scale
}

namespace ref {
inline void dropout_forward(const double* x, const int64_t* sample_ids, double* y, uint8_t* mask,
                            const DropoutParams& p);
inline void dropout_backward(const double* dy, const uint8_t* mask, double* dx,
                             const DropoutParams& p);
}  // namespace ref

namespace cpu {
/// sample_ids (N); writes y and mask (N, D).
void dropout_forward(const float* x, const int64_t* sample_ids, float* y, uint8_t* mask,
                     const DropoutParams& p);
void dropout_backward(const float* dy, const uint8_t* mask, float* dx, const DropoutParams& p);
}  // namespace cpu

namespace cuda {  // kernels/cuda/elementwise.cu (device pointers; the engine's stream)
void dropout_forward(const float* x, const int64_t* sample_ids, float* y, uint8_t* mask,
                     const DropoutParams& p);
void dropout_backward(const float* dy, const uint8_t* mask, float* dx, const DropoutParams& p);
}  // namespace cuda

}  // namespace dt::kernels

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
inline float dropout_scale(float p) { return 1.0f / (1.0f - p); }

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

}  // namespace dt::kernels

// SPDX-License-Identifier: MIT
// Contract of the weight-init kernel: a weight's values drawn from the init stream, on the device
// that holds the weight (models/model.cpp's Model::init through engine/ops/init.h).
//
// Recipe (a pure function of (seed, sub, i): no thread count, grid or device changes a bit):
//   r    = philox_draw(seed, RngStream::kInit, index = i, sub)     (one draw per element, word 0)
//   v[i] = (2 * uniform01(r.v[0]) - 1) * bound                                        // ORDER
// each step rounded in float. uniform01 is k / 2^24, so 2u and 2u - 1 are exact and only the
// product rounds: v[i] is the float nearest the exact value (what ref:: computes in double).
#pragma once
#include <cstdint>

#include "kernels/common/hd.h"
#include "kernels/common/philox.h"

namespace dt::kernels {

struct InitUniformParams {
    int64_t n = 0;       // elements
    uint64_t seed = 0;   // the init stream's seed (--seed-init)
    uint32_t sub = 0;    // which weight: the k-th trainable weight in canonical order
    float bound = 0.0f;  // values in [-bound, bound)
};

/// Element i of the recipe: what cpu:: and cuda:: write (host-device).
DT_HD float init_uniform_element(int64_t i, const InitUniformParams& p) {
    using namespace dt::kernels::common;
    const Philox4 r = philox_draw(p.seed, RngStream::kInit, static_cast<uint64_t>(i), p.sub);
    return (2.0f * uniform01(r.v[0]) - 1.0f) * p.bound;  // ORDER: 2u, - 1, * bound
}

namespace ref {
inline void init_uniform(double* v, const InitUniformParams& p);  // kernels/ref/init_ref.h
}  // namespace ref

namespace cpu {
/// v[0 .. n) = the recipe's values (v: host memory).
void init_uniform(float* v, const InitUniformParams& p);
}  // namespace cpu

namespace cuda {  // kernels/cuda/elementwise.cu (device pointer; the engine's stream)
void init_uniform(float* v, const InitUniformParams& p);
}  // namespace cuda

}  // namespace dt::kernels

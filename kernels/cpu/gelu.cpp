// SPDX-License-Identifier: MIT
// GELU on the CPU: the contract's element functions over fixed static blocks (no reduction, so
// neither the split nor the thread count changes a bit), with the branch-free exp so that each
// instruction-set path's loop vectorizes (isa_variants.h; the same bits on every path).
#include "kernels/gelu.h"

#include <algorithm>

#include "kernels/cpu/isa_variants.h"

namespace dt::kernels::cpu {

namespace {

constexpr int64_t kBlock = 4096;  // elements per static block

DT_ISA_BODY void gelu_forward_range_body(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = gelu_forward_element<true>(x[i]);
}
DT_ISA_FLAT_VARIANTS(void, gelu_forward_range, (const float* x, float* y, int64_t n), (x, y, n))

DT_ISA_BODY void gelu_backward_range_body(const float* x, const float* dy, float* dx, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dx[i] = gelu_backward_element<true>(x[i], dy[i]);
}
DT_ISA_FLAT_VARIANTS(void, gelu_backward_range,
                     (const float* x, const float* dy, float* dx, int64_t n), (x, dy, dx, n))

}  // namespace

void gelu_forward(const float* x, float* y, int64_t n) {
    const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n > 16384)
    for (int64_t b = 0; b < blocks; ++b)
        gelu_forward_range(x + b * kBlock, y + b * kBlock, std::min(kBlock, n - b * kBlock));
}

void gelu_backward(const float* x, const float* dy, float* dx, int64_t n) {
    const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n > 16384)
    for (int64_t b = 0; b < blocks; ++b)
        gelu_backward_range(x + b * kBlock, dy + b * kBlock, dx + b * kBlock,
                            std::min(kBlock, n - b * kBlock));
}

}  // namespace dt::kernels::cpu

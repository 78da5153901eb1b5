// SPDX-License-Identifier: MIT
// Reference embedding in double precision (deliberately naive; see kernels/embedding.h): the
// gather, and the scatter-add as one double sum per table element over the rows in index order.
#pragma once
#include "kernels/embedding.h"

namespace dt::kernels::ref {

inline void embedding_forward(const int64_t* ids, const double* table, double* y,
                              const EmbeddingParams& p) {
    for (int64_t m = 0; m < p.M; ++m)
        for (int64_t c = 0; c < p.C; ++c) y[m * p.C + c] = table[ids[m] * p.C + c];
}

inline void embedding_backward(const int64_t* ids, const double* dy, double* dtable,
                               const EmbeddingParams& p) {
    for (int64_t i = 0; i < p.V * p.C; ++i) dtable[i] = 0.0;
    for (int64_t m = 0; m < p.M; ++m)
        for (int64_t c = 0; c < p.C; ++c) dtable[ids[m] * p.C + c] += dy[m * p.C + c];
}

}  // namespace dt::kernels::ref

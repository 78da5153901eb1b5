// SPDX-License-Identifier: MIT
// Reference softmax cross-entropy in double precision with std::exp / std::log (naive loops).
#pragma once
#include <cmath>

#include "kernels/softmax_xent.h"

namespace dt::kernels::ref {

inline void softmax_xent_forward(const double* logits, const int64_t* labels, double* rowmax,
                                 double* rowsum, double* loss_rows, double* loss,
                                 const SoftmaxXentParams& p) {
    double total = 0.0;
    for (int64_t n = 0; n < p.N; ++n) {
        const double* l = logits + n * p.K;
        double m = l[0];
        for (int64_t k = 1; k < p.K; ++k) m = l[k] > m ? l[k] : m;
        double s = 0.0;
        for (int64_t k = 0; k < p.K; ++k) s += std::exp(l[k] - m);
        rowmax[n] = m;
        rowsum[n] = s;
        loss_rows[n] = std::log(s) - (l[labels[n]] - m);
        total += loss_rows[n];
    }
    *loss = total / static_cast<double>(softmax_xent_divisor(p));
}

inline void softmax_xent_backward(const double* logits, const int64_t* labels,
                                  const double* rowmax, const double* rowsum, double dloss,
                                  double* dlogits, const SoftmaxXentParams& p) {
    for (int64_t n = 0; n < p.N; ++n)
        for (int64_t k = 0; k < p.K; ++k) {
            double prob = std::exp(logits[n * p.K + k] - rowmax[n]) / rowsum[n];
            double onehot = k == labels[n] ? 1.0 : 0.0;
            dlogits[n * p.K + k] =
                (prob - onehot) * dloss / static_cast<double>(softmax_xent_divisor(p));
        }
}

}  // namespace dt::kernels::ref

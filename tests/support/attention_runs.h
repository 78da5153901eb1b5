// SPDX-License-Identifier: MIT
// The CPU's attention forward and backward in one call, for the attention tests (the kernel's
// own, and the CUDA bodies' on the host grid): every output starts as NaN, so one a kernel
// leaves unwritten shows.
#pragma once
#include <cmath>
#include <vector>

#include "kernels/attention.h"

namespace dt::test {

struct AttentionOuts {
    std::vector<float> out, rowmax, rowsum, dqkv;
};

/// The forward in p.accum, then the backward in p.accum from its outputs.
inline AttentionOuts attention_on_cpu(const std::vector<float>& qkv, const std::vector<float>& dout,
                                      const kernels::AttentionParams& p) {
    AttentionOuts o;
    o.out.assign(static_cast<std::size_t>(p.B * p.T * p.H * p.D), NAN);
    o.rowmax.assign(static_cast<std::size_t>(kernels::attention_rows(p)), NAN);
    o.rowsum = o.rowmax;
    o.dqkv.assign(qkv.size(), NAN);
    kernels::cpu::attention_forward(qkv.data(), o.out.data(), o.rowmax.data(), o.rowsum.data(), p);
    kernels::cpu::attention_backward(qkv.data(), o.out.data(), o.rowmax.data(), o.rowsum.data(),
                                     dout.data(), o.dqkv.data(), p);
    return o;
}

}  // namespace dt::test

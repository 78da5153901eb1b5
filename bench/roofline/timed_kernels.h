// SPDX-License-Identifier: MIT
// Every CPU kernel call of the engine, timed: for its lifetime a TimedCpuKernels serves the CPU
// with a copy of the CPU's kernel table whose every entry calls the same kernel between two clock
// reads (engine/core/backend.h's ScopedKernelTable). The kernels and their bits are unchanged;
// a call costs two clock reads more. Convolutions and linear layers also say their shape, their
// floating-point work and the accumulation mode of the site they compute. A convolution's work
// counts the multiply-adds whose input lies inside the image: taps over the padding are zeros.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "kernels/kernel_table.h"

namespace dt::bench {

struct KernelCall {
    kernels::KernelId id{};
    double seconds = 0.0;
    std::string layer;   // conv2d: "NxCixHxW>Co kKhxKw/s", linear: "NxI>O"; empty for others
    double flops = 0.0;  // 2 per useful multiply-add of a conv2d or linear kernel; 0 for others
    double bytes = 0.0;  // the least memory a conv2d or linear kernel moves: its operands once
    std::string mode;    // the site's accumulation mode (dgrad, wgrad); empty where none
};

class TimedCpuKernels {
 public:
    TimedCpuKernels();
    ~TimedCpuKernels();
    TimedCpuKernels(const TimedCpuKernels&) = delete;
    TimedCpuKernels& operator=(const TimedCpuKernels&) = delete;

    /// The calls made since the last take (or since construction), in call order.
    std::vector<KernelCall> take();

 private:
    struct Scope;
    std::unique_ptr<Scope> scope_;
};

}  // namespace dt::bench

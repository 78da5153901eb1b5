// SPDX-License-Identifier: MIT
// The kernel table of a device: one function pointer per entry point of kernels/op_list.inc, for
// forward and backward. Engine ops call the table of their tensors' device (engine/core/backend.h)
// and never a kernel namespace directly, so adding a backend means filling one table:
// kernels/cpu/kernel_table.cpp fills the CPU's (kernels/cuda/ will fill the CUDA one). An entry
// has the type of the cpu:: declaration in its contract header; every backend declares the same
// signature, so assigning its function to the entry checks it at compile time.
#pragma once
#include <cstdint>
#include <iterator>

#include "kernels/adam.h"
#include "kernels/add.h"
#include "kernels/attention.h"
#include "kernels/batchnorm2d.h"
#include "kernels/bias_add.h"
#include "kernels/conv2d.h"
#include "kernels/dropout.h"
#include "kernels/embedding.h"
#include "kernels/exact_round.h"
#include "kernels/finite.h"
#include "kernels/gelu.h"
#include "kernels/grad_norm.h"
#include "kernels/init.h"
#include "kernels/layer_norm.h"
#include "kernels/linear.h"
#include "kernels/pool2d.h"
#include "kernels/relu.h"
#include "kernels/sgd.h"
#include "kernels/softmax_xent.h"

namespace dt::kernels {

/// The engine ops of op_list.inc (scoped, named as the ops).
enum class OpKind : int {
#define DT_OP(op) op,
#include "kernels/op_list.inc"
};
/// The kernel entry points of op_list.inc (scoped, named as the entry points).
enum class KernelId : int {
#define DT_KERNEL(op, entry) entry,
#include "kernels/op_list.inc"
};

inline constexpr const char* kOpNames[] = {
#define DT_OP(op) #op,
#include "kernels/op_list.inc"
};
inline constexpr const char* kKernelNames[] = {
#define DT_KERNEL(op, entry) #entry,
#include "kernels/op_list.inc"
};
inline constexpr OpKind kKernelOps[] = {
#define DT_KERNEL(op, entry) OpKind::op,
#include "kernels/op_list.inc"
};
inline constexpr int kNumOps = static_cast<int>(std::size(kOpNames));
inline constexpr int kNumKernels = static_cast<int>(std::size(kKernelNames));

inline constexpr const char* op_name(OpKind op) { return kOpNames[static_cast<int>(op)]; }
inline constexpr const char* kernel_name(KernelId k) { return kKernelNames[static_cast<int>(k)]; }
/// The op under which op_list.inc lists entry point k.
inline constexpr OpKind kernel_op(KernelId k) { return kKernelOps[static_cast<int>(k)]; }

struct KernelTable {
    const char* device = "?";  // for messages: "cpu", "cuda", or a test's name
#define DT_KERNEL(op, entry) decltype(&cpu::entry) entry = nullptr;
#include "kernels/op_list.inc"
};

namespace cpu {
/// The CPU's table: every entry filled with the cpu:: kernel of the same name.
const KernelTable& kernel_table();
}  // namespace cpu

namespace cuda {
/// The CUDA table (kernels/cuda/kernel_table.cpp): the entries written so far; the engine
/// completes the rest with entries that throw (engine/core/backend.cpp).
const KernelTable& kernel_table();
}  // namespace cuda

}  // namespace dt::kernels

// SPDX-License-Identifier: MIT
// runtime.h's build_architectures(): DT_CUDA_ARCHITECTURES is set on this file alone
// (kernels/cuda/CMakeLists.txt), so that another architecture list recompiles nothing else.
#include "kernels/cuda/runtime.h"

#ifndef DT_CUDA_ARCHITECTURES
#error "kernels/cuda/CMakeLists.txt sets DT_CUDA_ARCHITECTURES"
#endif

namespace dt::kernels::cuda {

const char* build_architectures() { return DT_CUDA_ARCHITECTURES; }

}  // namespace dt::kernels::cuda

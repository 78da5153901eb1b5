// SPDX-License-Identifier: MIT
// The device the accumulation-mode checks run on in this binary: the cpu in dt_test_kernels, the
// cuda device in dt_test_cuda (compiled there with DT_MODES_ON_CUDA=1), and the DeviceCall that
// holds a kernel call's memory on it (op_modes_tester.h).
#pragma once
#include <memory>
#include <string>

#include "tests/kernels/modes/op_modes_tester.h"

#ifndef DT_MODES_ON_CUDA
#define DT_MODES_ON_CUDA 0
#endif
#if DT_MODES_ON_CUDA
#define DT_MODES_PREFIX Cuda
#else
#define DT_MODES_PREFIX Kernels
#endif

namespace dt::test {

inline constexpr bool kModesOnCpu = !DT_MODES_ON_CUDA;

/// A new call's memory on this binary's device.
std::unique_ptr<DeviceCall> modes_device_call();
/// False, with the reason, when the device is absent (cuda on a machine without a GPU).
bool modes_device_ready(std::string* why);

}  // namespace dt::test

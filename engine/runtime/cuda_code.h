// SPDX-License-Identifier: MIT
// Whether a CUDA build's kernels run on a device, from the architectures the build compiled
// them for (CMake's CMAKE_CUDA_ARCHITECTURES) and the device's compute capability, by CUDA's
// compatibility rules: sm_XY machine code runs on devices of major X and minor >= Y ("XYa": on
// X.Y alone); compute_XY PTX is compiled by the driver for any device of capability >= X.Y at
// the program's first launch of each kernel ("XYa": X.Y alone; "XYf": major X, minor >= Y).
// A plain CMake entry "XY" is both, "XY-real" the machine code, "XY-virtual" the PTX.
// Host code only, so that it is tested in every build.
#pragma once
#include <string>
#include <string_view>

namespace dt::cuda_device {

enum class CodeFit {
    kMachineCode,  // machine code for the device is in the build
    kPtxJit,       // only PTX the driver can compile for it: works, slow to start
    kNone,         // nothing the device can run: every launch would fail
    kUnknown,      // a list this cannot read ("native", "all", an emulated build)
};

struct CodeReport {
    CodeFit fit = CodeFit::kUnknown;
    std::string text;  // what runs, or what is missing and the CMake setting that fixes it
};

/// `architectures`: the CMake list, entries separated by ';' or ','. major, minor: the device's
/// compute capability.
CodeReport code_fit(std::string_view architectures, int major, int minor);

/// The runtime's answer for an empty kernel of the build (kernels/cuda/runtime.h's DeviceInfo).
struct RuntimeAnswer {
    bool runs = false;
    int binary_version = 0;  // of the code loaded (90: sm_90)
    std::string_view error;  // why not
};

/// What `detrain info` and `--device cuda` say of the build's code on a device: code_fit, with
/// the runtime's answer having the last word (a rule this does not know, a list it cannot read);
/// "emulated" (a hostcuda build) runs everything.
CodeReport device_code_report(std::string_view architectures, int major, int minor,
                              const RuntimeAnswer& runtime);

}  // namespace dt::cuda_device

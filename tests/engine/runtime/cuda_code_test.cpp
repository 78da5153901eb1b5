// SPDX-License-Identifier: MIT
// Whether a build's CUDA code runs on a device (engine/runtime/cuda_code.h): CUDA's
// compatibility rules over CMake's architecture lists.
#include "engine/runtime/cuda_code.h"

#include <gtest/gtest.h>

namespace dt::cuda_device {
namespace {

CodeFit fit(const char* archs, int major, int minor) { return code_fit(archs, major, minor).fit; }

TEST(CudaCode, MachineCodeRunsOnItsMajorFromItsMinorUp) {
    EXPECT_EQ(fit("90", 9, 0), CodeFit::kMachineCode);
    EXPECT_EQ(fit("80", 8, 6), CodeFit::kMachineCode);  // sm_80 code runs on an sm_86 GPU
    EXPECT_EQ(fit("86-real", 8, 9), CodeFit::kMachineCode);
    EXPECT_EQ(fit("86-real", 8, 0), CodeFit::kNone);                    // not on an older minor
    EXPECT_EQ(fit("80-real", 9, 0), CodeFit::kNone);                    // nor on another major
    EXPECT_EQ(fit("90-real;90-virtual", 9, 0), CodeFit::kMachineCode);  // the GPU kit's
    EXPECT_EQ(fit("80,90", 9, 0), CodeFit::kMachineCode);  // build_architectures()'s commas
    EXPECT_EQ(code_fit("90-real,90-virtual", 9, 0).text, "kernels in sm_90 machine code");
}

TEST(CudaCode, PtxIsCompiledForAnyNewerDevice) {
    // build/'s default (80: sm_80 and compute_80) on an H100: it runs, from PTX.
    const CodeReport h100 = code_fit("80", 9, 0);
    EXPECT_EQ(h100.fit, CodeFit::kPtxJit);
    EXPECT_NE(h100.text.find("compute_80 PTX"), std::string::npos) << h100.text;
    EXPECT_NE(h100.text.find("no sm_90 machine code"), std::string::npos) << h100.text;
    EXPECT_NE(h100.text.find("-DCMAKE_CUDA_ARCHITECTURES=90"), std::string::npos) << h100.text;
    EXPECT_EQ(fit("90-virtual", 12, 0), CodeFit::kPtxJit);
    EXPECT_EQ(fit("90-virtual", 8, 9), CodeFit::kNone);  // never for an older device
    // The newest PTX that fits is the one named.
    EXPECT_NE(code_fit("75-virtual;86-virtual;100-virtual", 9, 0).text.find("compute_86 PTX"),
              std::string::npos);
}

TEST(CudaCode, ArchitectureSpecificCodeRunsOnItsCapabilityAlone) {
    EXPECT_EQ(fit("90a", 9, 0), CodeFit::kMachineCode);
    EXPECT_EQ(fit("90a", 10, 0), CodeFit::kNone);  // neither its machine code nor its PTX
    EXPECT_EQ(fit("100a-real", 10, 3), CodeFit::kNone);
    EXPECT_EQ(fit("100f-virtual", 10, 3), CodeFit::kPtxJit);  // a family's PTX: same major
    EXPECT_EQ(fit("100f-virtual", 12, 0), CodeFit::kNone);
    EXPECT_EQ(fit("100f-real", 10, 3), CodeFit::kMachineCode);
}

TEST(CudaCode, NoCodeNamesWhatTheBuildHasAndTheSettingThatFixesIt) {
    const CodeReport r = code_fit("90-real;90-virtual", 8, 0);
    EXPECT_EQ(r.fit, CodeFit::kNone);
    EXPECT_EQ(r.text,
              "this build has no code a sm_80 device runs (it has sm_90, compute_90 PTX): rebuild "
              "with -DCMAKE_CUDA_ARCHITECTURES=80");
}

TEST(CudaCode, ListsItCannotReadAreUnknownNotRefused) {
    for (const char* archs : {"native", "all", "all-major", "", "90-fast", "9", "emulated"}) {
        const CodeReport r = code_fit(archs, 9, 0);
        EXPECT_EQ(r.fit, CodeFit::kUnknown) << archs;
        EXPECT_EQ(r.text, std::string("kernels built for '") + archs + "'");
    }
}

TEST(CudaCode, TheRuntimesAnswerHasTheLastWord) {
    const RuntimeAnswer runs{true, 90, ""};
    const RuntimeAnswer fails{false, 0, "cudaErrorNoKernelImageForDevice: no kernel image"};
    // Agreeing: the list's verdict.
    EXPECT_EQ(device_code_report("90", 9, 0, runs).fit, CodeFit::kMachineCode);
    EXPECT_EQ(device_code_report("80", 9, 0, runs).fit, CodeFit::kPtxJit);
    EXPECT_EQ(device_code_report("90-real", 8, 0, fails).text, code_fit("90-real", 8, 0).text);
    // A list that cannot be read, or a rule this does not know: the runtime decides.
    const CodeReport native = device_code_report("native", 9, 0, fails);
    EXPECT_EQ(native.fit, CodeFit::kNone);
    EXPECT_EQ(native.text,
              "this build's kernels (built for 'native') do not run on a sm_90 device "
              "(cudaErrorNoKernelImageForDevice: no kernel image): rebuild with "
              "-DCMAKE_CUDA_ARCHITECTURES=90");
    EXPECT_EQ(device_code_report("native", 9, 0, runs).fit, CodeFit::kUnknown);
    const CodeReport unknown_rule = device_code_report("90-real", 10, 0, runs);
    EXPECT_EQ(unknown_rule.fit, CodeFit::kUnknown);
    EXPECT_EQ(unknown_rule.text, "kernels built for '90-real' (sm_90 code loaded)");
    // An emulated build runs everything.
    EXPECT_EQ(device_code_report("emulated", 9, 0, runs).text, "kernels emulated on the host");
}

}  // namespace
}  // namespace dt::cuda_device

// SPDX-License-Identifier: MIT
// The one ISA module as the engine exposes it (engine/runtime/isa.h): names round-trip, an
// unknown name and a path this CPU lacks are ValueErrors that list what exists, setting a path
// puts it in force for the kernels (kernels/cpu_isa.h sees it) and ScopedCpuIsa restores it.
#include "engine/runtime/isa.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

#include "engine/core/error.h"
#include "tests/support/errors.h"

namespace dt {
namespace {

TEST(CpuIsa, NamesRoundTrip) {
    for (CpuIsa isa : kernels::kCpuIsas) EXPECT_EQ(cpu_isa_from_name(cpu_isa_name(isa)), isa);
    EXPECT_STREQ(cpu_isa_name(CpuIsa::kAvx512), "avx512");
}

TEST(CpuIsa, UnknownNameListsTheKnownOnes) {
    const std::string msg = test::message_of<ValueError>([] { cpu_isa_from_name("avx9"); });
    EXPECT_TRUE(test::has(msg, "'avx9'"));
    EXPECT_TRUE(test::has(msg, "scalar, avx2, avx512"));
}

TEST(CpuIsa, ScalarIsAlwaysSupportedAndListedFirst) {
    const std::vector<CpuIsa> have = supported_cpu_isas();
    ASSERT_FALSE(have.empty());
    EXPECT_EQ(have.front(), CpuIsa::kScalar);
    for (CpuIsa isa : kernels::kCpuIsas)
        EXPECT_EQ(cpu_isa_supported(isa), std::find(have.begin(), have.end(), isa) != have.end());
    // The default path is the best one unless DT_ISA names another supported one.
    if (std::getenv("DT_ISA") == nullptr) {
        EXPECT_EQ(cpu_isa(), have.back());
    }
}

TEST(CpuIsa, SetPutsAPathInForceAndTheScopeRestoresIt) {
    const CpuIsa before = cpu_isa();
    for (CpuIsa isa : supported_cpu_isas()) {
        const ScopedCpuIsa scoped(isa);
        EXPECT_EQ(cpu_isa(), isa);
        EXPECT_EQ(kernels::cpu::cpu_isa(), isa);  // what the kernels read
    }
    EXPECT_EQ(cpu_isa(), before);
}

TEST(CpuIsa, APathThisCpuLacksIsRefusedNamingWhatItHas) {
    if (cpu_isa_supported(CpuIsa::kAvx512)) GTEST_SKIP() << "this CPU runs every path";
    const CpuIsa before = cpu_isa();
    const std::string msg = test::message_of<ValueError>([] { set_cpu_isa(CpuIsa::kAvx512); });
    EXPECT_TRUE(test::has(msg, "cannot run the avx512"));
    EXPECT_TRUE(test::has(msg, "scalar"));
    EXPECT_EQ(cpu_isa(), before);
}

}  // namespace
}  // namespace dt

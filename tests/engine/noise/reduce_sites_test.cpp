// SPDX-License-Identifier: MIT
// The reduce-site registry (engine/noise/reduce_sites.h): names, per-site specs, per-call keys of
// the permuted mode (a counter per site, reset per run), and ScopedReduceConfig's restore.
#include "engine/noise/reduce_sites.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "kernels/common/accum_permuted.h"

namespace dt {
namespace {

constexpr std::size_t kSite(ReduceSite s) { return static_cast<std::size_t>(s); }

TEST(ReduceSites, NamesModesAndPerCallSpecs) {
    for (ReduceSite s : all_reduce_sites()) {
        EXPECT_EQ(reduce_site_from_name(reduce_site_name(s)), s);
    }
    EXPECT_FALSE(reduce_site_from_name("conv").has_value());
    EXPECT_EQ(reduce_site_names().size(), static_cast<std::size_t>(kNumReduceSites));
    for (const std::string& m : accum_mode_names()) {
        EXPECT_EQ(accum_mode_name(*accum_mode_from_name(m)), m);
    }

    using kernels::common::accum_spec;
    ReduceSiteSpecs specs{};
    specs.fill(accum_spec(AccumMode::kTree));
    specs[kSite(ReduceSite::kLoss)] = accum_spec(AccumMode::kPermuted, 42);  // run seed 42
    specs[kSite(ReduceSite::kBnStats)] = accum_spec(AccumMode::kExact);
    {
        const ScopedReduceConfig scoped(specs);
        EXPECT_EQ(accum_mode(ReduceSite::kBnStats), AccumMode::kExact);
        EXPECT_EQ(accum_mode(ReduceSite::kConvWgrad), AccumMode::kTree);
        std::vector<uint64_t> keys;
        for (uint64_t call = 0; call < 3; ++call) {
            const AccumSpec a = accum_spec_for_call(ReduceSite::kLoss);
            EXPECT_EQ(a.mode, AccumMode::kPermuted);
            EXPECT_EQ(a.permute_key, kernels::common::permute_key(
                                         42, static_cast<uint32_t>(ReduceSite::kLoss), call));
            keys.push_back(a.permute_key);
        }
        EXPECT_NE(keys[0], keys[1]);  // each call its own order
        EXPECT_EQ(reduce_call_count(ReduceSite::kLoss), 3u);
        EXPECT_EQ(accum_spec_for_call(ReduceSite::kBnStats).mode, AccumMode::kExact);
        EXPECT_EQ(reduce_call_count(ReduceSite::kBnStats), 1u);
        reset_reduce_counters();  // a new run replays the same keys
        EXPECT_EQ(accum_spec_for_call(ReduceSite::kLoss).permute_key, keys[0]);
        set_accum_mode(ReduceSite::kLoss, AccumMode::kTree);
        EXPECT_EQ(reduce_site_spec(ReduceSite::kLoss).permute_key, 42u);  // seed kept
    }
    for (ReduceSite s : all_reduce_sites()) EXPECT_EQ(accum_mode(s), AccumMode::kTree);  // restored
}

// Every site but grad.allreduce (summed in engine/runtime) is some kernel's, and
// kernels/op_list.inc names each kernel's site with the engine's names: the tester needs an entry
// for each such kernel (tests/kernels/modes/site_entries_test.cpp), so a new site reaches it
// through that table.
TEST(ReduceSites, EveryKernelSiteIsInTheOpList) {
    std::set<std::string> listed;
#define DT_SITE(entry, site) listed.insert(site);
#include "kernels/op_list.inc"
    for (ReduceSite s : all_reduce_sites()) {
        if (s == ReduceSite::kGradAllreduce) continue;
        EXPECT_TRUE(listed.count(reduce_site_name(s)))
            << reduce_site_name(s) << " has no DT_SITE row in kernels/op_list.inc";
    }
    for (const std::string& name : listed)
        EXPECT_TRUE(reduce_site_from_name(name).has_value())
            << "kernels/op_list.inc names site " << name << ", which the engine does not have";
}

}  // namespace
}  // namespace dt

// SPDX-License-Identifier: MIT
// The accumulation-mode checks (op_modes_tester.h) over every entry: one test per check, kernel
// and mode, named Kernels/<Check>.<kernel>_<mode> in ctest's list.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <iostream>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "tests/kernels/modes/bias_add_entry.h"
#include "tests/kernels/modes/op_modes_tester.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"

namespace dt::test {

const std::vector<ModesEntry>& modes_entries() {
    static const std::vector<ModesEntry> entries = {bias_add_entry()};
    return entries;
}

namespace {

using kernels::common::AccumMode;
using kernels::common::AccumSpec;

constexpr uint64_t kKey = 0xb1a5ull;

AccumSpec spec_of(AccumMode m, uint64_t key = kKey) {
    return kernels::common::accum_spec(m, m == AccumMode::kPermuted ? key : 0);
}

::testing::AssertionResult same_bits(const Floats& a, const Floats& b) {
    if (a.size() != b.size()) return ::testing::AssertionFailure() << "output counts differ";
    for (std::size_t k = 0; k < a.size(); ++k) {
        const ::testing::AssertionResult r = bitwise_equal(a[k], b[k]);
        if (!r) return ::testing::AssertionFailure() << "output " << k << ": " << r.message();
    }
    return ::testing::AssertionSuccess();
}

/// The double reference of shape s's outputs on `in`, and mode m's bound for each element.
struct Reference {
    Doubles want, bound;
};
Reference reference_of(const ModesEntry& e, int s, const Floats& in, AccumMode m) {
    Reference r{e.reference(s, in, false), e.reference(s, in, true)};
    for (std::vector<double>& b : r.bound) b = eps_scaled(b, e.bound(s, m));
    return r;
}

/// got within its bound of the reference, output by output.
void expect_within_bound(const Reference& ref, const Floats& got) {
    for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_TRUE(within_bound(got[k].data(), ref.want[k].data(), ref.bound[k].data(),
                                 static_cast<int64_t>(got[k].size())))
            << "output " << k;
}

/// j -> 7j + 3 mod N: not a reversal, which mirrors a balanced tree and so leaves tree's bits
/// unchanged when N is a power of two (7 is coprime to the shapes' N).
std::vector<int64_t> sample_order(int64_t n) {
    std::vector<int64_t> order(static_cast<std::size_t>(n));
    for (int64_t j = 0; j < n; ++j) order[static_cast<std::size_t>(j)] = (7 * j + 3) % n;
    return order;
}

using Param = std::tuple<int, AccumMode>;  // entry, mode

class ModesCheck : public ::testing::TestWithParam<Param> {
  protected:
    const ModesEntry& entry() const { return modes_entries()[std::get<0>(GetParam())]; }
    AccumMode mode() const { return std::get<1>(GetParam()); }
};

std::string name_of(const ::testing::TestParamInfo<Param>& info) {
    return modes_entries()[std::get<0>(info.param)].kernel + "_" +
           accum_mode_name(std::get<1>(info.param));
}

auto entries_with(std::initializer_list<AccumMode> modes) {
    std::vector<int> idx(modes_entries().size());
    std::iota(idx.begin(), idx.end(), 0);
    return ::testing::Combine(::testing::ValuesIn(idx), ::testing::ValuesIn(modes));
}

using Recipe = ModesCheck;
TEST_P(Recipe, EqualsTheModesRecipeBitwise) {
    const ModesEntry& e = entry();
    for (int s = 0; s < static_cast<int>(e.shapes.size()); ++s) {
        SCOPED_TRACE(e.shapes[s]);
        const Floats in = e.inputs(s, 30, false);
        ASSERT_TRUE(same_bits(e.run(s, in, spec_of(mode())), e.recipe(s, in, spec_of(mode()))));
    }
}
INSTANTIATE_TEST_SUITE_P(Kernels, Recipe,
                         entries_with({AccumMode::kKahan, AccumMode::kExact,
                                       AccumMode::kPermuted}),
                         name_of);

using Bound = ModesCheck;
TEST_P(Bound, WithinTheModesDerivedBound) {
    const ModesEntry& e = entry();
    for (int s = 0; s < static_cast<int>(e.shapes.size()); ++s) {
        SCOPED_TRACE(e.shapes[s]);
        const Floats in = e.inputs(s, 31, false);
        expect_within_bound(reference_of(e, s, in, mode()), e.run(s, in, spec_of(mode())));
    }
}
INSTANTIATE_TEST_SUITE_P(Kernels, Bound,
                         entries_with({AccumMode::kTree, AccumMode::kKahan, AccumMode::kExact,
                                       AccumMode::kPermuted, AccumMode::kAtomic}),
                         name_of);

using Threads = ModesCheck;
TEST_P(Threads, ThreadCountChangesNoBit) {
    const ModesEntry& e = entry();
    for (int s : e.thread_shapes) {
        SCOPED_TRACE(e.shapes[s]);
        const Floats in = e.inputs(s, 32, false);
        omp_set_num_threads(1);
        const Floats first = e.run(s, in, spec_of(mode()));
        for (int threads : {2, 3, 4, 7}) {
            omp_set_num_threads(threads);
            ASSERT_TRUE(same_bits(e.run(s, in, spec_of(mode())), first)) << threads << " threads";
        }
    }
    omp_set_num_threads(omp_get_num_procs());
}
INSTANTIATE_TEST_SUITE_P(Kernels, Threads,
                         entries_with({AccumMode::kTree, AccumMode::kKahan, AccumMode::kExact,
                                       AccumMode::kPermuted}),
                         name_of);

using SampleOrder = ModesCheck;
TEST_P(SampleOrder, ExactIgnoresTheOrderOfSamplesAndTreeDoesNot) {
    const ModesEntry& e = entry();
    for (int s : e.order_shapes) {
        SCOPED_TRACE(e.shapes[s]);
        const Floats in = e.inputs(s, 33, false);
        const std::vector<int64_t> order = sample_order(e.samples(s));
        const Floats moved = e.permute(s, in, order);
        const Floats exact = e.run(s, in, spec_of(AccumMode::kExact));
        ASSERT_TRUE(same_bits(e.permuted(s, exact, order),
                              e.run(s, moved, spec_of(AccumMode::kExact))));
        ASSERT_TRUE(same_bits(exact, e.recipe(s, in, spec_of(AccumMode::kExact))));
        EXPECT_FALSE(same_bits(e.permuted(s, e.run(s, in, spec_of(AccumMode::kTree)), order),
                               e.run(s, moved, spec_of(AccumMode::kTree))))
            << "tree's bits should depend on the order of the samples";
    }
}
INSTANTIATE_TEST_SUITE_P(Kernels, SampleOrder, entries_with({AccumMode::kExact}), name_of);

using Kahan = ModesCheck;
TEST_P(Kahan, BeatsTreeOnIllConditionedSums) {
    const ModesEntry& e = entry();
    const int s = e.ill_shape;
    SCOPED_TRACE(e.shapes[s]);
    const Floats in = e.inputs(s, 34, true);
    const Doubles want = e.reference(s, in, false), mag = e.reference(s, in, true);
    const Floats kahan = e.run(s, in, spec_of(AccumMode::kKahan));
    const Floats tree = e.run(s, in, spec_of(AccumMode::kTree));
    const double m = static_cast<double>(e.terms(s));
    for (std::size_t k = 0; k < kahan.size(); ++k) {
        std::vector<double> bound(want[k].size());
        for (std::size_t i = 0; i < bound.size(); ++i)  // Neumaier: eps |S| + 2 m eps^2 sum|x|
            bound[i] = kEps32 * std::fabs(want[k][i]) + 2 * m * kEps32 * kEps32 * mag[k][i];
        EXPECT_TRUE(within_bound(kahan[k].data(), want[k].data(), bound.data(),
                                 static_cast<int64_t>(bound.size())));
        EXPECT_LT(total_error(kahan[k], want[k]), total_error(tree[k], want[k])) << "output " << k;
    }
}
INSTANTIATE_TEST_SUITE_P(Kernels, Kahan, entries_with({AccumMode::kKahan}), name_of);

using Key = ModesCheck;
TEST_P(Key, PermutedReplaysItsKeyAndVariesWithIt) {
    const ModesEntry& e = entry();
    const int s = e.key_shape;
    const Floats in = e.inputs(s, 35, false);
    EXPECT_TRUE(same_bits(e.run(s, in, spec_of(mode(), 7)), e.run(s, in, spec_of(mode(), 7))));
    EXPECT_FALSE(same_bits(e.run(s, in, spec_of(mode(), 7)), e.run(s, in, spec_of(mode(), 8))));
}
INSTANTIATE_TEST_SUITE_P(Kernels, Key, entries_with({AccumMode::kPermuted}), name_of);

using Atomic = ModesCheck;
TEST_P(Atomic, WithinItsBoundUnderContention) {
    const ModesEntry& e = entry();
    for (int s : e.atomic_shapes) {
        SCOPED_TRACE(e.shapes[s]);
        const Floats in = e.inputs(s, 36, false);
        const Floats recipe = e.recipe(s, in, spec_of(AccumMode::kAtomic));
        const Reference ref = reference_of(e, s, in, AccumMode::kAtomic);
        for (int threads : {2, 4}) {
            SCOPED_TRACE(std::to_string(threads) + " threads");
            omp_set_num_threads(threads);
            std::set<std::string> seen;
            for (int call = 0; call < 5; ++call) {
                const Floats got = e.run(s, in, spec_of(AccumMode::kAtomic));
                expect_within_bound(ref, got);
                if (e.atomic_commutes(s)) {
                    EXPECT_TRUE(same_bits(got, recipe));
                }
                std::string all;
                for (const auto& v : got) all += bits_of(v);
                seen.insert(all);
            }
            std::cout << "[ atomic   ] " << e.kernel << " " << e.shapes[s] << ": " << seen.size()
                      << " distinct of 5 calls (" << threads << " threads)\n";
        }
    }
    omp_set_num_threads(omp_get_num_procs());
}
INSTANTIATE_TEST_SUITE_P(Kernels, Atomic, entries_with({AccumMode::kAtomic}), name_of);

}  // namespace
}  // namespace dt::test

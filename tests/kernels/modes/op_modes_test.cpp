// SPDX-License-Identifier: MIT
// The accumulation-mode checks (op_modes_tester.h) over every entry: one test per check, kernel
// and mode, named <Device>/<Check>.<kernel>_<mode> in ctest's list: Kernels/ on the cpu
// (dt_test_kernels), Cuda/ on the cuda device (dt_test_cuda, built with DT_MODES_ON_CUDA).
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <iostream>
#include <numeric>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "kernels/cpu_isa.h"
#include "tests/kernels/modes/modes_devices.h"
#include "tests/kernels/modes/op_modes_tester.h"
#include "tests/support/compare.h"
#include "tests/support/modes.h"

namespace dt::test {
namespace {

constexpr uint64_t kKey = 0xb1a5ull;

AccumSpec spec_of(AccumMode m, uint64_t key = kKey) {
    return kernels::common::accum_spec(m, m == AccumMode::kPermuted ? key : 0);
}

/// The kernel's outputs on shape s, called on this binary's device.
Floats run(const ModesEntry& e, int s, const Floats& in, AccumSpec spec) {
    const std::unique_ptr<DeviceCall> d = modes_device_call();
    e.call(s, in, spec, *d);
    return d->results();
}

::testing::AssertionResult same_bits(const Floats& a, const Floats& b) {
    if (a.size() != b.size()) return ::testing::AssertionFailure() << "output counts differ";
    for (std::size_t k = 0; k < a.size(); ++k) {
        const ::testing::AssertionResult r = bitwise_equal(a[k], b[k]);
        if (!r) return ::testing::AssertionFailure() << "output " << k << ": " << r.message();
    }
    return ::testing::AssertionSuccess();
}

/// f(isa name) on every ISA path the CPU has (the path in force restored after); once on cuda.
void for_each_isa(const std::function<void(const std::string&)>& f) {
    if (!kModesOnCpu) return f("cuda");
    const kernels::CpuIsa saved = kernels::cpu::cpu_isa();
    for (kernels::CpuIsa isa : kernels::kCpuIsas)
        if (kernels::cpu::cpu_isa_set(isa)) f(kernels::cpu::cpu_isa_name(isa));
    kernels::cpu::cpu_isa_set(saved);
}

/// The double reference of shape s's outputs on `in`, and mode m's bound for each element.
struct Reference {
    Doubles want, bound;
};
Reference reference_of(const ModesEntry& e, int s, const Floats& in, AccumMode m) {
    if (e.bounds) return {e.reference(s, in, false), e.bounds(s, in, m)};
    Reference r{e.reference(s, in, false), e.reference(s, in, true)};
    for (std::vector<double>& b : r.bound) b = eps_scaled(b, e.bound(s, m));
    return r;
}

/// got within its bound of the reference, output by output (those the reference bounds).
void expect_within_bound(const Reference& ref, const Floats& got) {
    for (std::size_t k = 0; k < got.size(); ++k) {
        if (ref.want[k].empty()) continue;
        EXPECT_TRUE(within_bound(got[k].data(), ref.want[k].data(), ref.bound[k].data(),
                                 static_cast<int64_t>(got[k].size())))
            << "output " << k;
    }
}

/// j -> 7j + 3 mod N: not a reversal, which mirrors a balanced tree and so leaves tree's bits
/// unchanged when N is a power of two (7 is coprime to the shapes' N).
std::vector<int64_t> sample_order(int64_t n) {
    std::vector<int64_t> order(static_cast<std::size_t>(n));
    for (int64_t j = 0; j < n; ++j) order[static_cast<std::size_t>(j)] = (7 * j + 3) % n;
    return order;
}

/// Every shape but the atomic-only ones.
std::vector<int> every_shape(const ModesEntry& e) {
    std::vector<int> shapes;
    for (int s = 0; s < static_cast<int>(e.shapes.size()); ++s)
        if (std::find(e.atomic_only_shapes.begin(), e.atomic_only_shapes.end(), s) ==
            e.atomic_only_shapes.end())
            shapes.push_back(s);
    return shapes;
}

/// The shapes a check runs on with the inputs it makes there: every shape uniform, then the
/// special shapes with special inputs.
std::vector<std::pair<int, Inputs>> all_inputs(const ModesEntry& e) {
    std::vector<std::pair<int, Inputs>> cases;
    for (int s : every_shape(e)) cases.emplace_back(s, Inputs::kUniform);
    for (int s : e.special_shapes) cases.emplace_back(s, Inputs::kSpecial);
    return cases;
}

std::string trace_of(const ModesEntry& e, int s, Inputs kind) {
    return e.shapes[static_cast<std::size_t>(s)] + (kind == Inputs::kSpecial ? " special" : "");
}

using Param = std::tuple<int, AccumMode>;  // entry, mode

class ModesCheck : public ::testing::TestWithParam<Param> {
 protected:
    void SetUp() override {
        std::string why;
        if (!modes_device_ready(&why)) GTEST_SKIP() << why;
    }
    void TearDown() override { omp_set_num_threads(omp_get_num_procs()); }
    const ModesEntry& entry() const { return modes_entries()[std::get<0>(GetParam())]; }
    AccumMode mode() const { return std::get<1>(GetParam()); }
};

std::string name_of(const ::testing::TestParamInfo<Param>& info) {
    return modes_entries()[std::get<0>(info.param)].kernel + "_" +
           accum_mode_name(std::get<1>(info.param));
}

/// The entries that `has` accepts, each with every mode of `modes`.
auto entries_with(
    std::initializer_list<AccumMode> modes,
    bool (*has)(const ModesEntry&) = [](const ModesEntry&) { return true; }) {
    std::vector<int> idx;
    for (int i = 0; i < static_cast<int>(modes_entries().size()); ++i)
        if (has(modes_entries()[static_cast<std::size_t>(i)])) idx.push_back(i);
    return ::testing::Combine(::testing::ValuesIn(idx), ::testing::ValuesIn(modes));
}

#define DT_MODES_SUITE(check, ...) \
    INSTANTIATE_TEST_SUITE_P(DT_MODES_PREFIX, check, entries_with(__VA_ARGS__), name_of)

constexpr std::initializer_list<AccumMode> kAll = {AccumMode::kTree, AccumMode::kKahan,
                                                   AccumMode::kExact, AccumMode::kPermuted,
                                                   AccumMode::kAtomic};
constexpr std::initializer_list<AccumMode> kFixed = {AccumMode::kTree, AccumMode::kKahan,
                                                     AccumMode::kExact, AccumMode::kPermuted};

using Recipe = ModesCheck;
TEST_P(Recipe, EqualsTheModesRecipeBitwise) {
    const ModesEntry& e = entry();
    if (mode() == AccumMode::kAtomic) omp_set_num_threads(1);  // partials in index order
    for (const auto& shape_inputs : all_inputs(e)) {
        // Plain variables, not a structured binding: lambdas below capture s (clang 14).
        const int s = shape_inputs.first;
        const Inputs kind = shape_inputs.second;
        SCOPED_TRACE(trace_of(e, s, kind));
        const Floats in = e.inputs(s, 30, kind);
        const Floats want = e.recipe(s, in, spec_of(mode()));
        for_each_isa([&](const std::string& isa) {
            EXPECT_TRUE(same_bits(run(e, s, in, spec_of(mode())), want)) << isa;
        });
    }
}
// The device's atomic partials are not the cpu's: no recipe of them on cuda.
DT_MODES_SUITE(Recipe, kModesOnCpu ? kAll : kFixed);

using Bound = ModesCheck;
TEST_P(Bound, WithinTheModesDerivedBound) {
    const ModesEntry& e = entry();
    for (int s : every_shape(e)) {
        SCOPED_TRACE(e.shapes[static_cast<std::size_t>(s)]);
        const Floats in = e.inputs(s, 31, Inputs::kUniform);
        expect_within_bound(reference_of(e, s, in, mode()), run(e, s, in, spec_of(mode())));
    }
}
DT_MODES_SUITE(Bound, kAll);

#if !DT_MODES_ON_CUDA  // OpenMP threads and ISA paths are the cpu's
using Threads = ModesCheck;
TEST_P(Threads, ThreadCountAndIsaChangeNoBit) {
    const ModesEntry& e = entry();
    for (int s : e.thread_shapes) {
        SCOPED_TRACE(e.shapes[static_cast<std::size_t>(s)]);
        const Floats in = e.inputs(s, 32, Inputs::kUniform);
        omp_set_num_threads(1);
        const Floats first = run(e, s, in, spec_of(mode()));
        for (int threads : {2, 3, 4, 7}) {
            omp_set_num_threads(threads);
            ASSERT_TRUE(same_bits(run(e, s, in, spec_of(mode())), first)) << threads << " threads";
        }
        omp_set_num_threads(2);
        for_each_isa([&](const std::string& isa) {
            EXPECT_TRUE(same_bits(run(e, s, in, spec_of(mode())), first)) << isa << ", 2 threads";
        });
    }
}
DT_MODES_SUITE(Threads, kFixed);
#endif

using ModeFree = ModesCheck;
TEST_P(ModeFree, OutputsNoModeChangesKeepTheTreesBits) {
    const ModesEntry& e = entry();
    for (const auto& shape_inputs : all_inputs(e)) {
        // Plain variables, not a structured binding: lambdas below capture s (clang 14).
        const int s = shape_inputs.first;
        const Inputs kind = shape_inputs.second;
        const std::vector<int> outs = e.mode_free(s);
        if (outs.empty()) continue;
        SCOPED_TRACE(trace_of(e, s, kind));
        const Floats in = e.inputs(s, 37, kind);
        const Floats tree = run(e, s, in, spec_of(AccumMode::kTree));
        for (int threads : {1, 2, 4}) {
            omp_set_num_threads(threads);
            const Floats got = run(e, s, in, spec_of(mode()));
            for (int k : outs)
                EXPECT_TRUE(bitwise_equal(got[static_cast<std::size_t>(k)],
                                          tree[static_cast<std::size_t>(k)]))
                    << "output " << k << ", " << threads << " threads";
        }
    }
}
DT_MODES_SUITE(ModeFree,
               {AccumMode::kKahan, AccumMode::kExact, AccumMode::kPermuted, AccumMode::kAtomic},
               [](const ModesEntry& e) { return static_cast<bool>(e.mode_free); });

using SampleOrder = ModesCheck;
TEST_P(SampleOrder, ExactIgnoresTheOrderOfSamplesAndTreeDoesNot) {
    const ModesEntry& e = entry();
    int tree_moved = 0;  // order shapes where tree's bits just move with the samples
    for (int s : e.order_shapes) {
        SCOPED_TRACE(e.shapes[static_cast<std::size_t>(s)]);
        const Floats in = e.inputs(s, 33, Inputs::kUniform);
        const std::vector<int64_t> order = sample_order(e.samples(s));
        const Floats moved = e.permute(s, in, order);
        const Floats exact = run(e, s, in, spec_of(AccumMode::kExact));
        ASSERT_TRUE(
            same_bits(e.permuted(s, exact, order), run(e, s, moved, spec_of(AccumMode::kExact))));
        ASSERT_TRUE(same_bits(exact, e.recipe(s, in, spec_of(AccumMode::kExact))));
        tree_moved += same_bits(e.permuted(s, run(e, s, in, spec_of(AccumMode::kTree)), order),
                                run(e, s, moved, spec_of(AccumMode::kTree)))
                          ? 1
                          : 0;
    }
    // Where an output sums over samples, tree's bits change on some shape (so exact's
    // invariance shows something); where none does, they move with the samples on every one.
    const int shapes = static_cast<int>(e.order_shapes.size());
    if (e.crosses_samples) {
        EXPECT_LT(tree_moved, shapes) << "tree's bits should depend on the order of the samples";
    } else {
        EXPECT_EQ(tree_moved, shapes) << "no output sums over samples: every mode moves with them";
    }
}
DT_MODES_SUITE(SampleOrder, {AccumMode::kExact},
               [](const ModesEntry& e) { return !e.order_shapes.empty(); });

using Kahan = ModesCheck;
TEST_P(Kahan, BeatsTreeOnIllConditionedSums) {
    const ModesEntry& e = entry();
    const int s = e.ill_shape;
    SCOPED_TRACE(e.shapes[static_cast<std::size_t>(s)]);
    const Floats in = e.inputs(s, 34, Inputs::kIll);
    const Doubles want = e.ill_reference ? e.ill_reference(s, in) : e.reference(s, in, false);
    const Doubles mag = e.reference(s, in, true);
    const Floats kahan = run(e, s, in, spec_of(AccumMode::kKahan));
    const Floats tree = run(e, s, in, spec_of(AccumMode::kTree));
    const double m = static_cast<double>(e.terms(s));
    for (std::size_t k = 0; k < kahan.size(); ++k) {
        if (want[k].empty()) continue;
        std::vector<double> bound(want[k].size());
        for (std::size_t i = 0; i < bound.size(); ++i)  // Neumaier: eps |S| + 2 m eps^2 sum|x|
            bound[i] = kEps32 * std::fabs(want[k][i]) + 2 * m * kEps32 * kEps32 * mag[k][i];
        EXPECT_TRUE(within_bound(kahan[k].data(), want[k].data(), bound.data(),
                                 static_cast<int64_t>(bound.size())))
            << "output " << k;
        EXPECT_LT(total_error(kahan[k], want[k]), total_error(tree[k], want[k])) << "output " << k;
    }
}
DT_MODES_SUITE(Kahan, {AccumMode::kKahan});

using Key = ModesCheck;
TEST_P(Key, PermutedReplaysItsKeyAndVariesWithIt) {
    const ModesEntry& e = entry();
    const int s = e.key_shape;
    const Floats in = e.inputs(s, 35, Inputs::kUniform);
    const Floats seven = run(e, s, in, spec_of(mode(), 7));
    EXPECT_TRUE(same_bits(run(e, s, in, spec_of(mode(), 7)), seven));
    int differ = 0;
    for (uint64_t key = 8; key <= 12; ++key)
        differ += same_bits(run(e, s, in, spec_of(mode(), key)), seven) ? 0 : 1;
    EXPECT_GE(differ, e.key_min_differ) << "of keys 8 to 12, so many gave other bits than 7";
}
DT_MODES_SUITE(Key, {AccumMode::kPermuted});

using Atomic = ModesCheck;
TEST_P(Atomic, WithinItsBoundUnderContention) {
    const ModesEntry& e = entry();
    for (int s : e.atomic_shapes) {
        SCOPED_TRACE(e.shapes[static_cast<std::size_t>(s)]);
        const Floats in = e.inputs(s, 36, Inputs::kUniform);
        const Settled settled = e.atomic_settled(s, in);
        bool any_settled = false;  // else the recipe is not needed (it may be slow to compute)
        for (const std::vector<char>& v : settled)
            any_settled |= std::find(v.begin(), v.end(), 1) != v.end();
        const Floats recipe = any_settled ? e.recipe(s, in, spec_of(AccumMode::kAtomic)) : Floats{};
        const Reference ref = reference_of(e, s, in, AccumMode::kAtomic);
        for (int threads : kModesOnCpu ? std::vector<int>{2, 4} : std::vector<int>{1}) {
            const std::string on = kModesOnCpu ? std::to_string(threads) + " threads" : "cuda";
            SCOPED_TRACE(on);
            omp_set_num_threads(threads);
            std::set<std::string> seen;
            for (int call = 0; call < 5; ++call) {
                const Floats got = run(e, s, in, spec_of(AccumMode::kAtomic));
                expect_within_bound(ref, got);
                for (std::size_t k = 0; kModesOnCpu && k < got.size(); ++k)
                    for (std::size_t i = 0; i < got[k].size(); ++i)
                        if (settled[k][i]) {
                            ASSERT_EQ(bits(got[k][i]), bits(recipe[k][i]))
                                << "output " << k << " element " << i << " (settled)";
                        }
                std::string all;
                for (const auto& v : got) all += bits_of(v);
                seen.insert(all);
            }
            std::cout << "[ atomic   ] " << e.kernel << " " << e.shapes[static_cast<std::size_t>(s)]
                      << ": " << seen.size() << " distinct of 5 calls (" << on << ")\n";
        }
    }
}
DT_MODES_SUITE(Atomic, {AccumMode::kAtomic});

}  // namespace
}  // namespace dt::test

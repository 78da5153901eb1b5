// SPDX-License-Identifier: MIT
// The trail comparison of apps/audit/audit_compare.h: ULP distances, the first differing entry,
// structural differences, the spread per step and the value statistics; and hash_bits, which
// must not depend on the thread count.
#include "apps/audit/audit_compare.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <vector>

#include "engine/autograd/trace.h"

namespace dt {
namespace {

TraceEntry entry(int64_t step, int64_t index, const char* op, uint64_t hash,
                 const char* phase = "forward") {
    TraceEntry e;
    e.step = step, e.index = index, e.phase = phase, e.op = op, e.tensor = "output";
    e.shape = {2, 3};
    e.hash = hash;
    return e;
}

TEST(AuditCompare, UlpDistances) {
    EXPECT_EQ(ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)), 1.0);
    EXPECT_EQ(ulp_distance(0.0f, -0.0f), 0.0);
    EXPECT_EQ(ulp_distance(-1e-45f, 1e-45f), 2.0);  // across zero
    EXPECT_TRUE(std::isinf(ulp_distance(std::nanf(""), 1.0f)));
    EXPECT_EQ(ulp_distance(std::nanf(""), std::nanf("")), 0.0);
}

TEST(AuditCompare, TheFirstDifferingEntryAndItsSpread) {
    const std::vector<TraceEntry> a = {entry(0, 0, "conv2d", 1), entry(0, 1, "relu", 2),
                                       entry(1, 0, "conv2d", 3), entry(1, 1, "relu", 4),
                                       entry(1, 2, "optimizer", 5, "update")};
    EXPECT_FALSE(compare_trails(a, a).first.has_value());
    std::vector<TraceEntry> b = a;
    b[1].hash = 20, b[2].hash = 30, b[4].hash = 50;
    const AuditResult r = compare_trails(a, b);
    ASSERT_TRUE(r.first.has_value());
    EXPECT_EQ(r.first->a.op, "relu");
    EXPECT_EQ(r.first->a.step, 0);
    EXPECT_FALSE(r.first->structural);
    ASSERT_EQ(r.spread.size(), 2u);
    EXPECT_EQ(r.spread[0].differing, 1);
    EXPECT_EQ(r.spread[1].differing, 2);
    EXPECT_EQ(r.weights_differing, 1);
    EXPECT_EQ(r.weights_total, 1);
    b = a;
    b[2].shape = {4, 3};  // other work, not other bits
    EXPECT_TRUE(compare_trails(a, b).first->structural);
    b = a;
    b.pop_back();  // B stops early
    EXPECT_TRUE(compare_trails(a, b).first->structural);
}

TEST(AuditCompare, OnlyTheStepsOfBothTrailsAreCompared) {
    // A resumed run's trail starts at its resume step.
    const std::vector<TraceEntry> a = {entry(0, 0, "conv2d", 1), entry(1, 0, "conv2d", 2),
                                       entry(2, 0, "conv2d", 3)};
    const std::vector<TraceEntry> b = {entry(1, 0, "conv2d", 2), entry(2, 0, "conv2d", 3)};
    AuditResult r = compare_trails(a, b);
    EXPECT_FALSE(r.first.has_value());
    EXPECT_EQ(r.steps, 2);
    EXPECT_EQ(r.steps_only_a, 1);
    EXPECT_EQ(r.steps_only_b, 0);
    std::vector<TraceEntry> c = b;
    c[1].hash = 9;
    r = compare_trails(a, c);
    ASSERT_TRUE(r.first.has_value());
    EXPECT_EQ(r.first->a.step, 2);
}

TEST(AuditCompare, ValueStatistics) {
    FirstDifference d;
    add_value_differences({1.0f, 2.0f, 3.0f}, {1.0f, std::nextafter(2.0f, 3.0f), 3.5f}, d);
    ASSERT_TRUE(d.values_known);
    EXPECT_EQ(d.elements, 3);
    EXPECT_EQ(d.differing, 2);
    EXPECT_EQ(d.max_ulp, ulp_distance(3.0f, 3.5f));
    EXPECT_NEAR(d.max_relative, 0.5 / 3.5, 1e-12);
}

TEST(TraceHash, IndependentOfTheThreadCountAndSensitiveToEveryBit) {
    std::vector<float> v(300000);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 977) * 0.25f;
    const int before = omp_get_max_threads();
    omp_set_num_threads(1);
    const uint64_t one = autograd::hash_bits(v.data(), v.size() * 4);
    omp_set_num_threads(2);
    EXPECT_EQ(autograd::hash_bits(v.data(), v.size() * 4), one);
    omp_set_num_threads(before);
    v[123456] = std::nextafter(v[123456], 1e9f);
    EXPECT_NE(autograd::hash_bits(v.data(), v.size() * 4), one);
}

}  // namespace
}  // namespace dt

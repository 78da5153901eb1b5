// SPDX-License-Identifier: MIT
// exact_add_rows equals its reference, one exact_add per leaf: the same exact value in the
// accumulators (normalised limbs and special flags compared, not only the rounded result), for
// leaves that fit the int64 fast path, leaves spread over many binades (plain path), zeros,
// -0, subnormals, Inf/NaN, huge values, a few tiny outliers (added one by one beside the int64
// sum), several waves into one accumulator, counts above 16 and element counts around the block
// size; likewise exact_sum_rows, exact_add_lanes and exact_add_columns.
#include "kernels/exact_rows.h"
#include "kernels/ref/exact_rows_ref.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

#include "kernels/common/accum_exact.h"
#include "kernels/cpu_isa.h"
#include "tests/support/rng.h"

namespace dt::kernels::cpu {
namespace {

using common::ExactAcc;

std::vector<ExactAcc> fresh(int64_t n) {
    std::vector<ExactAcc> a(static_cast<std::size_t>(n));
    common::exact_init_row(a.data(), n);
    return a;
}

void expect_same(std::vector<ExactAcc> got, std::vector<ExactAcc> want, const char* what) {
    for (std::size_t i = 0; i < got.size(); ++i) {
        common::exact_normalise(got[i]);
        common::exact_normalise(want[i]);
        ASSERT_EQ(got[i].special, want[i].special) << what << " element " << i;
        for (int k = 0; k < common::kExactLimbs; ++k)
            ASSERT_EQ(got[i].limb[k], want[i].limb[k]) << what << " element " << i << " limb " << k;
        const float g = common::exact_value(got[i]), w = common::exact_value(want[i]);
        ASSERT_EQ(std::memcmp(&g, &w, sizeof g), 0) << what << " element " << i;
    }
}

/// rows (count, n) with the kind of values `kind` selects, keyed by seed.
std::vector<float> rows(int64_t count, int64_t n, int kind, uint64_t seed) {
    std::vector<float> x = test::uniform_floats(count * n, -1.0f, 1.0f, seed, 1);
    const std::vector<float> e = test::uniform_floats(count * n, 0.0f, 1.0f, seed, 2);
    for (std::size_t i = 0; i < x.size(); ++i) {
        switch (kind) {
            case 1: x[i] = std::ldexp(x[i], static_cast<int>(e[i] * 80.0f) - 40); break;  // wide
            case 2:  // rare values sprinkled in
                if (e[i] < 0.05f) x[i] = 0.0f;
                else if (e[i] < 0.08f) x[i] = -0.0f;
                else if (e[i] < 0.10f) x[i] = std::numeric_limits<float>::denorm_min() * 77.0f;
                else if (e[i] < 0.11f) x[i] = std::numeric_limits<float>::infinity();
                else if (e[i] < 0.115f) x[i] = -std::numeric_limits<float>::infinity();
                else if (e[i] < 0.12f) x[i] = std::numeric_limits<float>::quiet_NaN();
                else if (e[i] < 0.14f) x[i] = x[i] * 3e37f;
                break;
            case 3: x[i] = std::ldexp(x[i], -120); break;  // near the subnormal range
            case 4: x[i] = std::ldexp(x[i], -140); break;  // subnormal sums
            case 5: x[i] = std::ldexp(x[i], 100 + static_cast<int>(e[i] * 28.0f)); break;  // Inf
            case 6:  // a few tiny outliers among values of a few binades
                if (e[i] < 0.04f) x[i] = std::ldexp(x[i], -60 - static_cast<int>(e[i] * 1000.0f));
                break;
            default: break;                               // kind 0: one binade or a few
        }
    }
    return x;
}

TEST(ExactRows, SameExactValueAsOneAddPerLeaf) {
    for (int kind = 0; kind < 7; ++kind)
        for (int64_t count : {1, 2, 7, 16, 17, 40, 128, 1025})
            for (int64_t n : {1, 255, 256, 257, 700}) {
                SCOPED_TRACE(::testing::Message() << "kind " << kind << " count " << count
                                                  << " n " << n);
                const int64_t stride = n + 3;  // rows apart, with a gap
                std::vector<float> x(static_cast<std::size_t>(count * stride), 5.0f);
                const std::vector<float> v = rows(count, n, kind, test::test_seed() + count);
                for (int64_t j = 0; j < count; ++j)
                    for (int64_t i = 0; i < n; ++i) x[j * stride + i] = v[j * n + i];
                std::vector<ExactAcc> got = fresh(n), want = fresh(n);
                for (int wave = 0; wave < 2; ++wave) {  // two waves into the same accumulators
                    exact_add_rows(got.data(), x.data(), stride, count, n);
                    ref::exact_add_rows(want.data(), x.data(), stride, count, n);
                }
                expect_same(got, want, "rows");
            }
}

TEST(ExactRows, CancellationToZeroAndBothPaths) {
    // +a and -a in one wave: exact zero (the fast path), and one element forced onto the plain
    // path by a leaf 2^60 times smaller.
    const int64_t n = 2;
    std::vector<float> x = {1.5f, 3.0f, -1.5f, std::ldexp(1.0f, -60)};
    std::vector<ExactAcc> got = fresh(n), want = fresh(n);
    exact_add_rows(got.data(), x.data(), 2, 2, n);
    ref::exact_add_rows(want.data(), x.data(), 2, 2, n);
    expect_same(got, want, "cancel");
    EXPECT_EQ(common::exact_value(got[0]), 0.0f);
    EXPECT_EQ(common::exact_value(got[1]), 3.0f);  // 3 + 2^-60 rounds to 3
}

TEST(ExactRows, SumRowsRoundsLikeTheReference) {
    // Every kind of value, counts across the int64 budget (spread 34 at 16 rows, 31 at 128),
    // element counts around the block size; the result is compared bit for bit.
    for (int kind = 0; kind < 7; ++kind)
        for (int64_t count : {1, 2, 7, 16, 17, 64, 128, 300})
            for (int64_t n : {1, 255, 257}) {
                SCOPED_TRACE(::testing::Message() << "kind " << kind << " count " << count
                                                  << " n " << n);
                const int64_t stride = n + 5;
                std::vector<float> x(static_cast<std::size_t>(count * stride), 7.0f);
                const std::vector<float> v = rows(count, n, kind, test::test_seed() + 99 * count);
                for (int64_t j = 0; j < count; ++j)
                    for (int64_t i = 0; i < n; ++i) x[j * stride + i] = v[j * n + i];
                std::vector<float> got(static_cast<std::size_t>(n)), want = got;
                exact_sum_rows(got.data(), x.data(), stride, count, n);
                ref::exact_sum_rows(want.data(), x.data(), stride, count, n);
                for (int64_t i = 0; i < n; ++i) {
                    uint32_t g, w;
                    std::memcpy(&g, &got[i], 4);
                    std::memcpy(&w, &want[i], 4);
                    ASSERT_EQ(g, w) << "element " << i << ": " << got[i] << " vs " << want[i];
                }
            }
}

TEST(ExactRows, SumRowsCancellationAndRoundingTies) {
    // Exact cancellation gives +0; 2^24 + 1 (a tie between 2^24 and 2^24 + 2) rounds to even;
    // 1 + 2^-60 leaves the int64 budget (the ExactAcc path) and rounds to 1.
    const std::vector<float> x = {1.5f, 16777216.0f, 1.0f, -1.5f, 1.0f, std::ldexp(1.0f, -60)};
    std::vector<float> out(3);
    exact_sum_rows(out.data(), x.data(), 3, 2, 3);
    EXPECT_EQ(std::signbit(out[0]), false);
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_EQ(out[1], 16777216.0f);
    EXPECT_EQ(out[2], 1.0f);
}

#if defined(__x86_64__)
TEST(ExactRows, SumRowsIgnoresDenormalsAreZeroMode) {
    // Subnormal terms (and sums) with the MXCSR's denormals-are-zero and flush-to-zero set, as
    // a host program may leave them: the exact sum reads the bits, so the result is the one
    // computed without them (the reference runs first, with the default MXCSR).
    const int64_t n = 48, count = 16;
    std::vector<float> x = rows(count, n, 4, test::test_seed() + 5);  // kind 4: subnormal sums
    std::vector<float> want(static_cast<std::size_t>(n)), got = want;
    ref::exact_sum_rows(want.data(), x.data(), n, count, n);
    const unsigned int saved = _mm_getcsr();
    _mm_setcsr(saved | 0x8040u);  // FTZ | DAZ
    exact_sum_rows(got.data(), x.data(), n, count, n);
    _mm_setcsr(saved);
    for (int64_t i = 0; i < n; ++i) {
        uint32_t g, w;
        std::memcpy(&g, &got[i], 4);
        std::memcpy(&w, &want[i], 4);
        ASSERT_EQ(g, w) << "element " << i << ": " << got[i] << " vs " << want[i];
    }
}
#endif

TEST(ExactRows, SumRowsAtTheInt64Budget) {
    // Leaves of all-ones mantissa and one leaf exactly `spread` binades lower, all of one sign:
    // the largest sums the int64 path may see (16 rows: spread 34; 17 rows: 33, so this one
    // leaves the int64 path). Either way the bits must be the reference's.
    for (int64_t count : {16, 17}) {
        const float big = -std::ldexp(16777215.0f, 34), tiny = -std::ldexp(1.0f, 23);
        std::vector<float> x(static_cast<std::size_t>(count), big);
        x[5] = tiny;
        float got = 0.0f, want = 1.0f;
        exact_sum_rows(&got, x.data(), 1, count, 1);
        ref::exact_sum_rows(&want, x.data(), 1, count, 1);
        EXPECT_EQ(got, want) << "count " << count;
        EXPECT_LE(exact_sum_rows_spread(count), 34u);
    }
}

TEST(ExactRows, AddLanesSameExactValueAsOneAddPerElement) {
    // Lengths below one row of lanes, around a row, around the 1024-row chunk; every kind of
    // value; into an accumulator that already holds a value.
    for (int kind = 0; kind < 7; ++kind)
        for (int64_t n : {0, 5, 16, 33, 1000, 16384, 16390, 40000}) {
            SCOPED_TRACE(::testing::Message() << "kind " << kind << " n " << n);
            const std::vector<float> x = rows(1, n, kind, test::test_seed() + 7 * n + kind);
            std::vector<ExactAcc> got = fresh(1), want = fresh(1);
            common::exact_add(got[0], 0.375f);
            common::exact_add(want[0], 0.375f);
            exact_add_lanes(got[0], x.data(), n);
            ref::exact_add_lanes(want[0], x.data(), n);
            expect_same(got, want, "lanes");
        }
}

TEST(ExactRows, AddColumnsSameExactValueAsOneAddPerElement) {
    // A strided block into one accumulator: columns around the block size, rows around the
    // 1024-row chunk; every kind of value; an accumulator that already holds a value.
    for (int kind = 0; kind < 7; ++kind)
        for (auto [count, n] : {std::pair<int64_t, int64_t>{1, 5}, {128, 49}, {3, 257},
                                {1030, 20}, {64, 784}}) {
            SCOPED_TRACE(::testing::Message() << "kind " << kind << " count " << count << " n "
                                              << n);
            const int64_t stride = n + 9;
            std::vector<float> x(static_cast<std::size_t>(count * stride), 3.0f);
            const std::vector<float> v = rows(count, n, kind, test::test_seed() + count + kind);
            for (int64_t j = 0; j < count; ++j)
                for (int64_t i = 0; i < n; ++i) x[j * stride + i] = v[j * n + i];
            std::vector<ExactAcc> got = fresh(1), want = fresh(1);
            common::exact_add(got[0], -1.25f);
            common::exact_add(want[0], -1.25f);
            exact_add_columns(got[0], x.data(), stride, count, n);
            ref::exact_add_columns(want[0], x.data(), stride, count, n);
            expect_same(got, want, "columns");
        }
}

}  // namespace
}  // namespace dt::kernels::cpu

namespace dt::kernels {
namespace {

/// The path the last call of the dispatched function `name` took (-2: no such function).
int last_path(const char* name) {
    for (const cpu::IsaDispatch& d : cpu::isa_dispatches())
        if (std::strcmp(d.name, name) == 0) return d.last;
    return -2;
}

TEST(ExactRows, FollowsThePathInForceWithTheSameBits) {
    // The exact row sums take the path that --isa / DT_ISA puts in force (kernels/cpu_isa.h),
    // as the GEMM does, and every path gives the same bits.
    const int64_t n = 300, count = 97;
    std::vector<float> x(static_cast<std::size_t>(n * count));
    for (std::size_t i = 0; i < x.size(); ++i)
        x[i] = std::ldexp(static_cast<float>(static_cast<int>(i * 2654435761u % 2001) - 1000),
                          static_cast<int>(i % 37) - 18);
    const CpuIsa saved = cpu::cpu_isa();
    std::vector<float> first;
    int paths = 0;
    for (CpuIsa isa : kCpuIsas) {
        if (!cpu::cpu_isa_set(isa)) continue;
        std::vector<float> out(static_cast<std::size_t>(n));
        cpu::exact_sum_rows(out.data(), x.data(), n, count, n);
        EXPECT_EQ(last_path("block_sums"), static_cast<int>(isa)) << cpu::cpu_isa_name(isa);
        if (isa != CpuIsa::kAvx512)  // (AVX-512 has passes of its own, the others the generic)
            EXPECT_EQ(last_path("block_sums_generic"), static_cast<int>(isa))
                << cpu::cpu_isa_name(isa);
        if (first.empty()) first = out;
        EXPECT_EQ(std::memcmp(first.data(), out.data(), 4 * out.size()), 0)
            << cpu::cpu_isa_name(isa);
        ++paths;
    }
    cpu::cpu_isa_set(saved);
    EXPECT_GE(paths, 1);
    for (const char* name : {"adam_range", "block_has_non_finite", "wgrad_tree_unit",
                             "kahan_group_of_8", "kahan_axpy", "block_sums_generic"})
        EXPECT_NE(last_path(name), -2) << name << " is not dispatched through cpu_isa.h";
}

}  // namespace
}  // namespace dt::kernels

// SPDX-License-Identifier: MIT
// Pins cpu::gemm's recipe (gemm_f32_k_fma): every ISA path equals a naive float loop in
// the specified order bit for bit, on awkward shapes (1, primes, tile-1/tile/tile+1 for MR, NR,
// KC, MC and NC) with every transpose/accumulate variant; results are within the derived bound
// (k+1) * eps32 * (|c0| + sum|a||b|) of the double reference; thread count changes no bit.
#include "kernels/gemm.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <vector>

#include "kernels/ref/gemm_ref.h"
#include "tests/support/compare.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

struct Shape3 {
    int64_t m, n, k;
};

// (m, n, k): MR in {4, 8}, NR in {8, 16, 32}, KC = 256, MC = 128, NC = 1024, unit width 128.
const Shape3 kShapes[] = {{1, 1, 1},
                          {1, 1, 7},
                          {2, 3, 5},
                          {3, 7, 1},
                          {4, 8, 2},
                          {5, 9, 13},
                          {7, 15, 31},
                          {8, 16, 3},
                          {9, 17, 16},
                          {7, 31, 9},
                          {8, 32, 11},
                          {9, 33, 17},
                          {17, 47, 64},
                          {15, 48, 5},
                          {16, 64, 1},
                          {33, 65, 29},
                          {13, 129, 37},
                          {129, 17, 23},
                          {31, 7, 255},
                          {8, 32, 256},
                          {11, 37, 257},
                          {6, 19, 600},
                          {130, 150, 40},
                          // B in place, 3-panel wide tiles with short halves of 4 and 3 rows
                          {20, 100, 50},
                          {27, 96, 3},
                          // A^T small path (serial): right edges of 4 / 5 columns over 3 row
                          // blocks of 16, the last one short
                          {100, 52, 20},
                          {40, 101, 30},
                          // small path over three K blocks (partial sums stored and reloaded):
                          // two 48-column groups, an edge of 4 columns, last rows 2 + 1
                          {19, 100, 530},
                          // K x N > 2^16: a plain B is packed, not read in place (on the small
                          // path up to 2^17); a second NC block of 6 columns (a narrow last panel)
                          {20, 300, 260},
                          {17, 1030, 70},
                          {9, 70, 1500},
                          // K x N > 2^17: the blocked path with B packed, three whole panels
                          // to a wide tile, rows 16 + 16 + 5, a second K block reloading C
                          {37, 700, 290}};

std::vector<CpuIsa> available_isas() {
    std::vector<CpuIsa> out;
    for (CpuIsa isa : {CpuIsa::kScalar, CpuIsa::kAvx2, CpuIsa::kAvx512})
        if (cpu::cpu_isa_supported(isa)) out.push_back(isa);
    return out;
}

/// Restores the ISA chosen at start-up when a test that forces one ends.
struct IsaGuard {
    CpuIsa saved = cpu::cpu_isa();
    ~IsaGuard() { cpu::cpu_isa_set(saved); }
};

struct Problem {
    GemmParams p;
    std::vector<float> a, b, c0;
};

/// Inputs with padded leading dimensions (+3) so that ld handling is exercised.
Problem make_problem(Shape3 s, bool ta, bool tb, bool acc, uint64_t seed) {
    Problem pr;
    pr.p =
        GemmParams{.m = s.m, .n = s.n, .k = s.k, .trans_a = ta, .trans_b = tb, .accumulate = acc};
    pr.p.lda = (ta ? s.m : s.k) + 3;
    pr.p.ldb = (tb ? s.k : s.n) + 3;
    pr.p.ldc = s.n + 3;
    pr.a = test::uniform_floats((ta ? s.k : s.m) * pr.p.lda, -1.0f, 1.0f, seed, 1);
    pr.b = test::uniform_floats((tb ? s.n : s.k) * pr.p.ldb, -1.0f, 1.0f, seed, 2);
    pr.c0 = test::uniform_floats(s.m * pr.p.ldc, -4.0f, 4.0f, seed, 3);
    return pr;
}

/// f(problem) for each of the shapes and each of their 8 variants (trans_a, trans_b, accumulate),
/// the problem keyed by seed + variant and named in the trace.
template <std::size_t N, class F>
void for_each_problem(const Shape3 (&shapes)[N], uint64_t seed, F f) {
    for (const Shape3& s : shapes) {
        for (int v = 0; v < 8; ++v) {
            const bool ta = v & 1, tb = v & 2, acc = v & 4;
            SCOPED_TRACE(testing::Message() << "m=" << s.m << " n=" << s.n << " k=" << s.k
                                            << " ta=" << ta << " tb=" << tb << " acc=" << acc);
            f(make_problem(s, ta, tb, acc, seed + v));
        }
    }
}

/// The ORDER of kernels/gemm.h written as a plain float loop.
std::vector<float> spec_gemm(const Problem& pr) {
    const GemmParams& p = pr.p;
    std::vector<float> c = pr.c0;
    for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t j = 0; j < p.n; ++j) {
            float acc = p.accumulate ? c[i * p.ldc + j] : 0.0f;
            for (int64_t k = 0; k < p.k; ++k) {
                const float av = p.trans_a ? pr.a[k * p.lda + i] : pr.a[i * p.lda + k];
                const float bv = p.trans_b ? pr.b[j * p.ldb + k] : pr.b[k * p.ldb + j];
                acc = std::fma(av, bv, acc);
            }
            c[i * p.ldc + j] = acc;
        }
    }
    return c;
}

std::vector<float> run_cpu(const Problem& pr) {
    std::vector<float> c = pr.c0;
    cpu::gemm(pr.a.data(), pr.b.data(), c.data(), pr.p);
    return c;
}

TEST(Gemm, EveryIsaMatchesTheOrderBitwise) {
    IsaGuard guard;
    const auto isas = available_isas();
    for (CpuIsa isa : isas) {
        ASSERT_TRUE(cpu::cpu_isa_set(isa));
        SCOPED_TRACE(cpu::cpu_isa_name(isa));
        for_each_problem(kShapes, test::test_seed(), [](const Problem& pr) {
            EXPECT_TRUE(test::bitwise_equal(run_cpu(pr), spec_gemm(pr)));
        });
    }
    std::cout << "[ info ] ISA paths checked:";
    for (CpuIsa isa : isas) std::cout << " " << cpu::cpu_isa_name(isa);
    std::cout << "\n";
}

TEST(Gemm, WithinDerivedBoundOfDoubleReference) {
    for_each_problem(kShapes, test::test_seed() + 100, [](const Problem& pr) {
        const std::vector<float> got = run_cpu(pr);
        // Reference, and the same product with absolute values for the bound.
        std::vector<double> a = test::to_double(pr.a), b = test::to_double(pr.b);
        std::vector<double> want = test::to_double(pr.c0), mag = want;
        ref::gemm(a.data(), b.data(), want.data(), pr.p);
        for (auto& x : a) x = std::fabs(x);
        for (auto& x : b) x = std::fabs(x);
        for (auto& x : mag) x = std::fabs(x);
        ref::gemm(a.data(), b.data(), mag.data(), pr.p);
        std::vector<double> bound(mag.size());
        for (std::size_t i = 0; i < mag.size(); ++i)
            bound[i] = static_cast<double>(pr.p.k + 1) * test::kEps32 * mag[i];
        // Rows hold ld > n; the padding columns are untouched C (bound 0 is fine there).
        EXPECT_TRUE(test::within_bound(got.data(), want.data(), bound.data(),
                                       static_cast<int64_t>(got.size())));
    });
}

TEST(Gemm, ThreadCountChangesNoBit) {
    const Shape3 big{300, 1100, 530};  // crosses MC, NC and two KC boundaries
    for (int v = 0; v < 4; ++v) {
        Problem pr = make_problem(big, v & 1, v & 2, false, test::test_seed() + 7);
        std::vector<float> first;
        for (int threads : {1, 2, 3, 4, 7}) {
            omp_set_num_threads(threads);
            std::vector<float> c = run_cpu(pr);
            if (first.empty()) {
                first = c;
                continue;
            }
            ASSERT_TRUE(test::bitwise_equal(c, first)) << "threads=" << threads << " v=" << v;
        }
        pr.p.parallel = false;
        ASSERT_TRUE(test::bitwise_equal(run_cpu(pr), first)) << "serial, v=" << v;
    }
    omp_set_num_threads(omp_get_num_procs());
}

TEST(Gemm, ParallelSplitOfOneRowBlockKeepsWholeTiles) {
    // One narrow row block: the parallel split halves the block height until there are enough
    // work units, and must stop at whole register tiles on every path (MR = 4, 8, 12, ...).
    // Long K: products of 2^22 multiply-adds or more (below that cpu::gemm runs serially).
    IsaGuard guard;
    const Shape3 shapes[] = {{96, 32, 1400}, {100, 20, 2100}, {36, 40, 2950}, {48, 16, 5500}};
    for (CpuIsa isa : available_isas()) {
        ASSERT_TRUE(cpu::cpu_isa_set(isa));
        for (const Shape3& s : shapes) {
            for (int threads : {2, 3}) {
                omp_set_num_threads(threads);
                SCOPED_TRACE(testing::Message() << cpu::cpu_isa_name(isa) << " m=" << s.m << " n="
                                                << s.n << " k=" << s.k << " threads=" << threads);
                Problem pr = make_problem(s, false, false, false, test::test_seed() + 9);
                ASSERT_TRUE(test::bitwise_equal(run_cpu(pr), spec_gemm(pr)));
            }
        }
    }
    omp_set_num_threads(omp_get_num_procs());
}

/// A GemmBSource over a plain matrix, written independently of the library's packer.
struct TestSource {
    const Problem* pr;
    static void pack(const void* ctx, int64_t k0, int64_t kc, int64_t j0, int64_t nr, int64_t pw,
                     float* dst) {
        const Problem& pr = *static_cast<const TestSource*>(ctx)->pr;
        for (int64_t k = 0; k < kc; ++k)
            for (int64_t j = 0; j < pw; ++j) {
                const int64_t kk = k0 + k, jj = j0 + j;
                dst[k * pw + j] = j >= nr        ? 0.0f
                                  : pr.p.trans_b ? pr.b[jj * pr.p.ldb + kk]
                                                 : pr.b[kk * pr.p.ldb + jj];
            }
    }
};

/// Every entry point (plain, B source, B rows, each with A plain or pre-packed) against the ORDER.
/// want: spec_gemm(pr).
void expect_every_entry_gives(const std::vector<float>& want, const Problem& pr, CpuIsa isa) {
    const Shape3 s{pr.p.m, pr.p.n, pr.p.k};
    ASSERT_TRUE(test::bitwise_equal(run_cpu(pr), want)) << "plain";
    const TestSource ts{&pr};
    const GemmBSource src{TestSource::pack, &ts};
    std::vector<float> c = pr.c0;
    cpu::gemm(pr.a.data(), src, c.data(), pr.p);
    ASSERT_TRUE(test::bitwise_equal(c, want)) << "B source";
    std::vector<float> buf(cpu::gemm_packed_a_size(isa, pr.p));
    const GemmPackedA pa = cpu::gemm_pack_a(isa, pr.a.data(), buf.data(), pr.p);
    c = pr.c0;
    cpu::gemm(pa, pr.b.data(), c.data(), pr.p);
    ASSERT_TRUE(test::bitwise_equal(c, want)) << "packed A";
    c = pr.c0;
    cpu::gemm(pa, src, c.data(), pr.p);
    ASSERT_TRUE(test::bitwise_equal(c, want)) << "packed A, B source";
    // B by rows: a dense (K, N) copy, rows passed as pointers.
    std::vector<float> dense(static_cast<std::size_t>(s.k * s.n));
    std::vector<const float*> rows(static_cast<std::size_t>(s.k));
    for (int64_t k = 0; k < s.k; ++k) {
        TestSource::pack(&ts, k, 1, 0, s.n, s.n, dense.data() + k * s.n);
        rows[k] = dense.data() + k * s.n;
    }
    c = pr.c0;
    cpu::gemm(pr.a.data(), GemmBRows{rows.data()}, c.data(), pr.p);
    ASSERT_TRUE(test::bitwise_equal(c, want)) << "B rows";
    c = pr.c0;
    cpu::gemm(pa, GemmBRows{rows.data()}, c.data(), pr.p);
    ASSERT_TRUE(test::bitwise_equal(c, want)) << "packed A, B rows";
}

TEST(Gemm, SourcesAndPackedAMatchTheOrderBitwise) {
    IsaGuard guard;
    for (CpuIsa isa : available_isas()) {
        ASSERT_TRUE(cpu::cpu_isa_set(isa));
        SCOPED_TRACE(cpu::cpu_isa_name(isa));
        for_each_problem(kShapes, test::test_seed() + 50, [&](const Problem& pr) {
            expect_every_entry_gives(spec_gemm(pr), pr, isa);
        });
    }
}

TEST(Gemm, ColumnSlicesMatchTheOrderBitwise) {
    // Parallel products of 1.5M multiply-adds or more with 64 columns or more per thread run as
    // one serial product per thread on a column slice (whole 16-column groups, the last slice
    // takes the rest). Slices of a short K take the small path (A^T, or A packed).
    IsaGuard guard;
    const Shape3 shapes[] = {{144, 520, 24}, {40, 1000, 100}, {64, 300, 300}};
    for_each_problem(shapes, test::test_seed() + 70, [](const Problem& pr) {
        const std::vector<float> want = spec_gemm(pr);
        for (CpuIsa isa : available_isas()) {
            ASSERT_TRUE(cpu::cpu_isa_set(isa));
            for (int threads : {2, 3}) {
                omp_set_num_threads(threads);
                SCOPED_TRACE(testing::Message()
                             << cpu::cpu_isa_name(isa) << " threads=" << threads);
                expect_every_entry_gives(want, pr, isa);
            }
        }
    });
    omp_set_num_threads(omp_get_num_procs());
}

TEST(Gemm, EmptyReductionGivesZeroOrKeepsC) {
    GemmParams p{.m = 3, .n = 5, .k = 0};
    std::vector<float> c(15, 7.0f);
    cpu::gemm(nullptr, nullptr, c.data(), p);
    for (float x : c) EXPECT_EQ(test::bits(x), 0u);
    c.assign(15, 7.0f);
    p.accumulate = true;
    cpu::gemm(nullptr, nullptr, c.data(), p);
    for (float x : c) EXPECT_EQ(x, 7.0f);
}

TEST(Gemm, ResultIsNeverNegativeZero) {
    // (-1) * 0 = -0 for every term; acc starts at +0, so the sum is +0 on every path.
    IsaGuard guard;
    std::vector<float> a(9 * 5, -1.0f), b(5 * 33, 0.0f), c(9 * 33, 1.0f);
    for (CpuIsa isa : available_isas()) {
        cpu::cpu_isa_set(isa);
        cpu::gemm(a.data(), b.data(), c.data(), GemmParams{.m = 9, .n = 33, .k = 5});
        for (float x : c) ASSERT_EQ(test::bits(x), 0u) << cpu::cpu_isa_name(isa);
    }
}

}  // namespace
}  // namespace dt::kernels

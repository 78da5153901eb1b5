// SPDX-License-Identifier: MIT
// The collectives of engine/runtime/collective.h under mpirun with 1, 2, 3 and 4 processes (ctest
// runs this binary once per count; alone it is a world of one). A fixed set of float terms per
// element (wide magnitudes, cancellations, signed zeros) is split into contiguous shards, one per
// rank; each rank checks, against values it computes for every rank itself:
//   - exact: the all-reduced exact accumulators (and the rounded exchange of the gradients)
//     round to exact_sum over the WHOLE set: the same bits for every process count (the
//     guarantee of the exact modes across P);
//   - tree, kahan, permuted, exact-of-partials: the rank combination of the P shard partials;
//   - atomic (MPI's sum): within a bound of the exact total.
#include "engine/runtime/collective.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/common/accum_exact.h"
#include "kernels/common/philox.h"
#include "kernels/common/reduce_tree.h"

namespace dt {
namespace {

namespace c = kernels::common;

constexpr int64_t kTerms = 997;  // per element (a prime: shards of unequal sizes)
constexpr int64_t kElems = 13;

float term(int64_t e, int64_t k) {
    const c::Philox4 r =
        c::philox_draw(11, c::RngStream::kTest, static_cast<uint64_t>(k), static_cast<uint32_t>(e));
    const float mag = std::ldexp(1.0f, static_cast<int>(r.v[1] % 60) - 30);
    float v = (c::uniform01(r.v[0]) - 0.5f) * mag;
    if (k % 101 == 7) v = -0.0f;
    if (k == 5) v = 3e30f;
    if (k == 900) v = -3e30f;  // cancels k == 5's: the exact sum keeps the small rest
    return v;
}

/// Terms [lo, hi) of rank r of P.
void shard(int r, int P, int64_t* lo, int64_t* hi) {
    *lo = kTerms * r / P;
    *hi = kTerms * (r + 1) / P;
}

/// The shard's sequential sums, per element (elements e0 .. e0 + n - 1 of the terms).
std::vector<float> partials_of(int r, int P, int64_t n = kElems, int64_t e0 = 0) {
    int64_t lo, hi;
    shard(r, P, &lo, &hi);
    std::vector<float> out(static_cast<std::size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        const int64_t e = e0 + i;
        float s = 0.0f;
        for (int64_t k = lo; k < hi; ++k) s = s + term(e, k);
        out[static_cast<std::size_t>(i)] = s;
    }
    return out;
}

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(Collective, TheWorldIsMpirunsWhenLaunchedByIt) {
    const char* np = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (np == nullptr) GTEST_SKIP() << "not launched by mpirun: a world of one";
    EXPECT_TRUE(mpi_built());
    EXPECT_EQ(world().size(), std::atoi(np));
    EXPECT_EQ(world().rank(), std::atoi(std::getenv("OMPI_COMM_WORLD_RANK")));
    EXPECT_EQ(world().host_processes(), std::atoi(std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")));
    EXPECT_NE(world().describe().find("mpi, rank"), std::string::npos) << world().describe();
}

TEST(Collective, AllRanksIsTrueOnlyWhereEveryRankSaysSo) {
    Collective& w = world();
    EXPECT_TRUE(all_ranks(w, true));
    EXPECT_FALSE(all_ranks(w, false));
    EXPECT_EQ(all_ranks(w, w.rank() != w.size() - 1), false);  // the last rank says no
    EXPECT_EQ(all_ranks(w, w.rank() == 0), w.size() == 1);
}

TEST(Collective, ExactAccumulatorsGiveTheSameBitsForAnyProcessCount) {
    Collective& w = world();
    int64_t lo, hi;
    shard(w.rank(), w.size(), &lo, &hi);
    std::vector<c::ExactAcc> accs(kElems);
    for (int64_t e = 0; e < kElems; ++e) {
        c::exact_init(accs[e]);
        for (int64_t k = lo; k < hi; ++k) c::exact_add(accs[e], term(e, k));
    }
    w.allreduce_exact(accs.data(), kElems);
    for (int64_t e = 0; e < kElems; ++e) {
        std::vector<float> all(kTerms);
        for (int64_t k = 0; k < kTerms; ++k) all[k] = term(e, k);
        EXPECT_TRUE(same_bits(c::exact_value(accs[e]), c::exact_sum(all.data(), kTerms)))
            << "element " << e << " on rank " << w.rank() << " of " << w.size();
    }
}

/// Terms by runs of 64 elements, the exchange's windows: sums that fit an int64 window at
/// several scales, sums in the subnormal range, sums that overflow to infinity, the wide sums of
/// term() (2^-54 .. 2^102), and then narrow sums with an infinity or a NaN here and there.
float window_term(int64_t e, int64_t k) {
    const int64_t run = e / 64;
    if (run == 3) return term(e, k);
    const c::Philox4 r =
        c::philox_draw(12, c::RngStream::kTest, static_cast<uint64_t>(k), static_cast<uint32_t>(e));
    const float u = c::uniform01(r.v[0]) - 0.5f;
    if (run == 1) return std::ldexp(u, -130);
    if (run == 2) return std::ldexp(u, 120 + static_cast<int>(e % 8));
    if (run == 4 && e % 7 == 0 && k == 3) return std::numeric_limits<float>::infinity();
    if (run == 4 && e % 11 == 0 && k == 5) return std::numeric_limits<float>::quiet_NaN();
    return std::ldexp(u, static_cast<int>(e % 9) - 4);
}

// Only the rounded sums (the gradients' exchange): int64 windows where the sums fit, packed
// accumulators where not, a reduce-scatter over blocks of elements (the last ones padded), then
// an all-gather; also with fewer elements than processes.
TEST(Collective, RoundedExactSumsGiveTheSameBitsForAnyProcessCount) {
    Collective& w = world();
    int64_t lo, hi;
    shard(w.rank(), w.size(), &lo, &hi);
    for (int64_t n : {int64_t{300}, int64_t{1}, int64_t{2}}) {
        std::vector<c::ExactAcc> accs(static_cast<std::size_t>(n));
        for (int64_t e = 0; e < n; ++e) {
            c::exact_init(accs[e]);
            for (int64_t k = lo; k < hi; ++k) c::exact_add(accs[e], window_term(e, k));
        }
        std::vector<float> out(static_cast<std::size_t>(n), -1.0f);
        w.allreduce_exact_rounded(accs.data(), n, out.data());
        for (int64_t e = 0; e < n; ++e) {
            std::vector<float> all(kTerms);
            for (int64_t k = 0; k < kTerms; ++k) all[k] = window_term(e, k);
            EXPECT_TRUE(same_bits(out[e], c::exact_sum(all.data(), kTerms)))
                << "element " << e << " of " << n << " on rank " << w.rank() << " of " << w.size();
        }
    }
}

TEST(Collective, RankCombinationsFollowTheirOrder) {
    // Sizes below P, not a multiple of P, and larger: the exchange cuts the elements into one
    // block per rank (the last padded), which must change no element's combination.
    Collective& w = world();
    const int P = w.size();
    for (const int64_t n : {int64_t{1}, int64_t{2}, kElems, int64_t{1001}}) {
        const int64_t e0 = n == kElems ? 0 : 100;  // other elements' terms for the other sizes
        std::vector<float> gathered;  // every rank's partials, computed here for all ranks
        for (int r = 0; r < P; ++r) {
            const std::vector<float> p = partials_of(r, P, n, e0);
            gathered.insert(gathered.end(), p.begin(), p.end());
        }
        for (const c::AccumSpec spec :
             {c::accum_spec(c::AccumMode::kTree), c::accum_spec(c::AccumMode::kKahan),
              c::accum_spec(c::AccumMode::kPermuted, 77), c::accum_spec(c::AccumMode::kExact)}) {
            SCOPED_TRACE(std::string(c::accum_mode_name(spec.mode)) + ", n = " + std::to_string(n));
            std::vector<float> mine = partials_of(w.rank(), P, n, e0);
            w.allreduce(mine.data(), n, spec);
            std::vector<float> want(static_cast<std::size_t>(n));
            combine_rank_partials(gathered.data(), P, n, spec, want.data());
            for (int64_t e = 0; e < n; ++e)
                EXPECT_TRUE(same_bits(mine[e], want[e])) << "element " << e << ", P = " << P;
            if (spec.mode == c::AccumMode::kTree) {  // the tree over ranks 0..P-1, spelled out
                for (int64_t e = 0; e < n; ++e)
                    EXPECT_TRUE(
                        same_bits(mine[e], c::reduce_tree_combine(gathered.data() + e, P, n)));
            }
        }
    }
}

TEST(Collective, AtomicIsMpisSumNearTheExactTotal) {
    Collective& w = world();
    std::vector<float> mine = partials_of(w.rank(), w.size());
    w.allreduce(mine.data(), kElems, c::accum_spec(c::AccumMode::kAtomic));
    for (int64_t e = 0; e < kElems; ++e) {
        std::vector<float> all(kTerms);
        for (int64_t k = 0; k < kTerms; ++k) all[k] = term(e, k);
        const double exact = c::exact_sum(all.data(), kTerms);
        // Float sums of terms up to 3e30 that cancel: a bound of a few ulps of the big terms.
        EXPECT_NEAR(mine[e], exact, 1e24) << "element " << e;
    }
    int value = w.rank() == 0 ? 42 : -1;
    w.broadcast(&value, sizeof value, 0);
    EXPECT_EQ(value, 42);
    w.barrier();
}

}  // namespace
}  // namespace dt

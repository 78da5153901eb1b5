// SPDX-License-Identifier: MIT
// GradBuckets (engine/runtime/grad_buckets.h) under mpirun with 1 to 4 processes: buckets handed
// to the communication thread as tensors become final, in any order of finishing (another on
// each rank), with collectives of the world running on this thread meanwhile, give the bits of
// one exchange of everything, for every mode; the cut follows the tensors from the last.
#include "engine/runtime/grad_buckets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "engine/runtime/exact_round.h"
#include "kernels/common/accum_exact.h"
#include "kernels/common/philox.h"

namespace dt {
namespace {

namespace c = kernels::common;

// The last is large enough for its exact sums to go in a call of their own (grad_buckets.cpp).
const std::vector<int64_t> kNumel = {5, 300, 1, 77, 1024, 13, 65539};

float value(int rank, std::size_t t, int64_t e, uint64_t salt) {
    const c::Philox4 r = c::philox_draw(23 + salt, c::RngStream::kTest,
                                        static_cast<uint64_t>(rank * 100 + static_cast<int>(t)),
                                        static_cast<uint32_t>(e));
    const float mag = std::ldexp(1.0f, static_cast<int>(r.v[1] % 40) - 20);
    return (c::uniform01(r.v[0]) - 0.5f) * mag;
}

/// This rank's share of tensor t: floats, or (exact) a host accumulator per use, the second use
/// of tensor 1 only (as a tied table's).
GradShare share_of(std::size_t t, bool exact) {
    const int rank = world().rank();
    const int64_t n = kNumel[t];
    GradShare s;
    if (!exact) {
        std::vector<float> v(static_cast<std::size_t>(n));
        for (int64_t e = 0; e < n; ++e) v[static_cast<std::size_t>(e)] = value(rank, t, e, 0);
        s.floats = Tensor::from_vector({n}, v);
        return s;
    }
    for (std::size_t u = 0; u < (t == 1 ? 2u : 1u); ++u) {
        Tensor words = Tensor::zeros({n * kExactAccWords}, DType::kI64);
        auto* accs = reinterpret_cast<c::ExactAcc*>(words.data<int64_t>());
        for (int64_t e = 0; e < n; ++e) {
            for (uint64_t k = 0; k < 3; ++k) c::exact_add(accs[e], value(rank, t, e, 1 + u + k));
        }
        s.accs.push_back(words);
    }
    return s;
}

std::vector<float> results(const GradBuckets& b, bool exact) {
    std::vector<float> out;
    for (std::size_t t = 0; t < kNumel.size(); ++t) {
        for (std::size_t u = 0; u < 2; ++u) {
            const float* p = exact ? b.rounded(t, u) : (u == 0 ? b.floats(t) : nullptr);
            if (p != nullptr) out.insert(out.end(), p, p + kNumel[t]);
        }
    }
    return out;
}

TEST(GradBuckets, BucketsHandedOverDuringOtherCollectivesGiveTheBitsOfOneExchange) {
    Collective& w = world();
    GradBuckets whole(kNumel, w, 0);
    GradBuckets cut(kNumel, w, 100);
    EXPECT_FALSE(whole.overlapping());
    EXPECT_TRUE(cut.overlapping());
    // From the last tensor: {65539}, {13, 1024}, {77, 1, 300}, {5}.
    EXPECT_EQ(whole.buckets(), 1u);
    EXPECT_EQ(cut.buckets(), 4u);
    // Not the buckets' order, and another order on each rank (as timing makes it): buckets
    // handed over as they complete would not match across the ranks.
    std::vector<std::size_t> finishing = {5, 3, 6, 4, 0, 2, 1};
    std::rotate(finishing.begin(), finishing.begin() + w.rank() % 7, finishing.end());
    for (const c::AccumMode mode : {c::AccumMode::kTree, c::AccumMode::kKahan,
                                    c::AccumMode::kPermuted, c::AccumMode::kExact}) {
        SCOPED_TRACE(c::accum_mode_name(mode));
        const c::AccumSpec spec = c::accum_spec(mode, 0x5eed);
        const bool exact = mode == c::AccumMode::kExact;
        for (int step = 0; step < 2; ++step) {  // the buckets are reused
            whole.begin(spec);
            for (std::size_t t = 0; t < kNumel.size(); ++t) whole.add(t, share_of(t, exact));
            (void)whole.finish();
            cut.begin(spec);
            for (std::size_t k = 0; k < finishing.size(); ++k) {
                cut.add(finishing[k], share_of(finishing[k], exact));
                float busy = static_cast<float>(k);  // the world's lane, as synced batch norm's
                w.allreduce(&busy, 1, c::accum_spec(c::AccumMode::kTree));
                EXPECT_EQ(busy, static_cast<float>(k) * static_cast<float>(w.size()));
            }
            const int64_t bytes = cut.finish();
            if (w.size() > 1) {
                EXPECT_GT(bytes, 0);
            }
            const std::vector<float> a = results(whole, exact), b = results(cut, exact);
            ASSERT_EQ(a.size(), b.size());
            ASSERT_FALSE(a.empty());
            EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
        }
    }
}

TEST(GradBuckets, ATensorAddedTwiceOrBeforeTheStepIsRefused) {
    GradBuckets b(kNumel, world(), 0);
    EXPECT_THROW(b.add(0, GradShare()), Error);
    b.begin(c::accum_spec(c::AccumMode::kTree));
    b.add(0, GradShare());
    EXPECT_THROW(b.add(0, GradShare()), Error);
    (void)b.finish();
    EXPECT_EQ(b.floats(0), nullptr);  // an empty share has no results
}

}  // namespace
}  // namespace dt

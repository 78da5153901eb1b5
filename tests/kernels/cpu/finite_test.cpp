// SPDX-License-Identifier: MIT
// first_non_finite (kernels/finite.h): finds the first NaN/Inf wherever it sits (inside or across
// the scan's blocks, in a short tail), treats the largest finite values and subnormals as finite,
// and agrees with the reference on random buffers.
#include "kernels/finite.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/ref/finite_ref.h"
#include "tests/support/rng.h"

namespace dt::kernels {
namespace {

using cpu::first_non_finite;

TEST(FirstNonFinite, FindsTheFirstNanOrInfAnywhere) {
    const float bad[] = {std::numeric_limits<float>::quiet_NaN(),
                         std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::signaling_NaN()};
    for (int64_t n : {1, 7, 1023, 1024, 1025, 5000}) {
        std::vector<float> v(static_cast<std::size_t>(n), 1.5f);
        EXPECT_EQ(first_non_finite(v.data(), n), -1) << n;
        for (float b : bad)
            for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
                std::vector<float> w = v;
                w[static_cast<std::size_t>(at)] = b;
                if (at + 1 < n) w[static_cast<std::size_t>(n - 1)] = b;  // a later one too
                EXPECT_EQ(first_non_finite(w.data(), n), at) << "n=" << n << " at=" << at;
            }
    }
}

TEST(FirstNonFinite, ExtremeFiniteValuesAreFinite) {
    const std::vector<float> v = {std::numeric_limits<float>::max(),
                                  -std::numeric_limits<float>::max(),
                                  std::numeric_limits<float>::denorm_min(), -0.0f, 0.0f,
                                  std::numeric_limits<float>::min()};
    EXPECT_EQ(first_non_finite(v.data(), std::ssize(v)), -1);
    EXPECT_EQ(first_non_finite(nullptr, 0), -1);
}

TEST(FirstNonFinite, AgreesWithTheReference) {
    for (int64_t n : {0, 3, 1024, 3000}) {
        std::vector<float> v = test::uniform_floats(n, -1e38f, 1e38f, test::test_seed(), 7);
        EXPECT_EQ(first_non_finite(v.data(), n), ref::first_non_finite(v.data(), n));
        for (int64_t at = n - 1; at >= 0; at -= 997) {
            v[static_cast<std::size_t>(at)] = (at % 2) ? std::numeric_limits<float>::infinity()
                                                    : std::nanf("");
            EXPECT_EQ(first_non_finite(v.data(), n), ref::first_non_finite(v.data(), n))
                << "n=" << n << " at=" << at;
            EXPECT_EQ(first_non_finite(v.data(), n), at);
        }
    }
}

TEST(FirstNonFinite, TheBatchedScanAnswersForEachBuffer) {
    const float inf = std::numeric_limits<float>::infinity();
    std::vector<std::vector<float>> bufs;
    for (int64_t n : {5, 0, 2049, 1024, 7, 3000, 9})
        bufs.push_back(test::uniform_floats(n, -1.0f, 1.0f, test::test_seed(), 8 + n));
    bufs[2][2000] = std::nanf(""), bufs[2][1500] = -inf;
    bufs[4][0] = inf;
    bufs[5][2999] = std::nanf("7"), bufs[6][4] = -std::nanf("");
    std::vector<ScanBuffer> b;
    for (const auto& v : bufs) b.push_back({v.data(), std::ssize(v)});
    std::vector<uint64_t> words(b.size(), kNoneFound);
    cpu::first_non_finite_each(b.data(), std::ssize(b), words.data());
    std::vector<int64_t> first;
    for (uint64_t w : words) first.push_back(non_finite_index(w));
    EXPECT_EQ(first, (std::vector<int64_t>{-1, -1, 1500, -1, 0, 2999, 4}));
    for (std::size_t i = 0; i < b.size(); ++i) {
        SCOPED_TRACE(i);
        EXPECT_EQ(first[i], ref::first_non_finite(b[i].p, b[i].n));
        if (first[i] < 0) {
            EXPECT_EQ(words[i], kNoneFound);
            continue;
        }
        // The value's class: its sign, and NaN or Inf (a NaN comes back quiet, payload dropped).
        const float want = b[i].p[first[i]];
        const float got = std::bit_cast<float>(non_finite_value_bits(words[i]));
        EXPECT_EQ(std::signbit(got), std::signbit(want));
        EXPECT_EQ(std::isnan(got), std::isnan(want));
        if (std::isinf(want)) {
            EXPECT_EQ(got, want);
        }
    }
    cpu::first_non_finite_each(nullptr, 0, nullptr);  // nothing to scan, nothing written
}

TEST(FirstNonFinite, AMarksOrderIsItsIndexWhateverTheValue) {
    // The GPU keeps the maximum mark over its threads' finds: the first index must win over any
    // later one, whatever the two values' classes, and over "none found".
    const uint32_t classes[] = {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00001u};
    for (uint32_t a : classes) {
        for (uint32_t later : classes) {
            EXPECT_GT(non_finite_mark(41, a), non_finite_mark(42, later));
            EXPECT_GT(non_finite_mark(0, a), non_finite_mark(1 << 30, later));
        }
        EXPECT_GT(non_finite_mark(int64_t{1} << 40, a), kNoneFound);
        EXPECT_EQ(non_finite_index(non_finite_mark(41, a)), 41);
    }
    EXPECT_EQ(non_finite_index(kNoneFound), -1);
}

TEST(FirstNonFinite, ScansIntoOneWordKeepTheFirstIndex) {
    // The scan max-combines into its word: scanning more buffers into one word keeps the
    // smallest index found, in either order, and a finite buffer changes nothing.
    std::vector<float> early(50, 1.0f), late(50, 1.0f), finite(50, 1.0f);
    early[7] = -std::numeric_limits<float>::infinity();
    late[30] = std::nanf("");
    const ScanBuffer e{early.data(), 50}, l{late.data(), 50}, f{finite.data(), 50};
    for (const auto& order : {std::vector<ScanBuffer>{e, l, f}, std::vector<ScanBuffer>{f, l, e}}) {
        uint64_t word = kNoneFound;
        for (const ScanBuffer& b : order) cpu::first_non_finite_each(&b, 1, &word);
        EXPECT_EQ(non_finite_index(word), 7);
        EXPECT_EQ(non_finite_value_bits(word), 0xff800000u);  // -inf
    }
    uint64_t word = kNoneFound;
    cpu::first_non_finite_each(&f, 1, &word);
    EXPECT_EQ(word, kNoneFound);
}

}  // namespace
}  // namespace dt::kernels

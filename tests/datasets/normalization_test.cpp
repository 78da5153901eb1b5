// SPDX-License-Identifier: MIT
// channel_statistics (datasets/normalization.h): exact per-channel mean and population standard
// deviation of x/255 on a small hand-made set, std 1 for a constant channel, independence of the
// example order, and the errors.
#include "datasets/normalization.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/core/error.h"
#include "tests/support/compare.h"

namespace dt {
namespace {

using test::bits;

// Two examples of 3 channels x 1x2 pixels, NCHW:
//   channel 0: {0, 255 | 255, 0}   -> x/255 in {0, 1, 1, 0}:     mean 0.5,  var 0.25,   std 0.5
//   channel 1: {51, 51 | 51, 51}   -> constant 0.2:              mean 0.2,  var 0 ->    std 1
//   channel 2: {0, 0 | 0, 255}     -> {0, 0, 0, 1}:              mean 0.25, var 0.1875
Dataset hand_made() {
    Dataset ds;
    ds.name = "hand/train";
    ds.size = 2;
    ds.channels = 3;
    ds.height = 1;
    ds.width = 2;
    ds.pixels = {0, 255, 51, 51, 0, 0,  // example 0: channels 0, 1, 2
                 255, 0, 51, 51, 0, 255};
    ds.labels = {0, 1};
    return ds;
}

TEST(ChannelStatistics, ExactOnAHandMadeSet) {
    const Normalization n = channel_statistics(hand_made());
    EXPECT_EQ(n.kind, NormKind::kStandardize);
    ASSERT_EQ(n.mean.size(), 3u);
    ASSERT_EQ(n.stddev.size(), 3u);
    EXPECT_EQ(bits(n.mean[0]), bits(0.5f));
    EXPECT_EQ(bits(n.stddev[0]), bits(0.5f));
    // 51/255 is 0.2 rounded to double; four copies summed and divided by 4 stay that double.
    EXPECT_EQ(bits(n.mean[1]), bits(static_cast<float>(51 / 255.0)));
    EXPECT_EQ(bits(n.stddev[1]), bits(1.0f));  // constant channel: only the mean is subtracted
    EXPECT_EQ(bits(n.mean[2]), bits(0.25f));
    // var = (3 * 0.25^2 + 0.75^2) / 4 = 0.1875, exact in double; std = float(sqrt(0.1875)).
    EXPECT_EQ(bits(n.stddev[2]), bits(static_cast<float>(std::sqrt(0.1875))));
}

TEST(ChannelStatistics, IndependentOfExampleOrder) {
    Dataset a = hand_made();
    a.pixels = {1, 2, 3, 4, 250, 7, 9, 200, 13, 17, 19, 23};  // 2 examples of 3x1x2
    Dataset b = a;
    for (int k = 0; k < 6; ++k) std::swap(b.pixels[k], b.pixels[6 + k]);  // swap the examples
    const Normalization na = channel_statistics(a), nb = channel_statistics(b);
    for (std::size_t c = 0; c < 3; ++c) {
        EXPECT_EQ(bits(na.mean[c]), bits(nb.mean[c])) << c;
        EXPECT_EQ(bits(na.stddev[c]), bits(nb.stddev[c])) << c;
    }
}

TEST(ChannelStatistics, RejectsAnEmptyOrInconsistentSet) {
    Dataset empty = hand_made();
    empty.size = 0;
    empty.pixels.clear();
    empty.labels.clear();
    EXPECT_THROW(channel_statistics(empty), ValueError);
    Dataset short_pixels = hand_made();
    short_pixels.pixels.pop_back();
    EXPECT_THROW(channel_statistics(short_pixels), ValueError);
}

TEST(Standardize, HoldsTheGivenStatistics) {
    const Normalization n = standardize({0.1f, 0.2f}, {0.3f, 0.4f});
    EXPECT_EQ(n.kind, NormKind::kStandardize);
    EXPECT_EQ(n.mean, (std::vector<float>{0.1f, 0.2f}));
    EXPECT_EQ(n.stddev, (std::vector<float>{0.3f, 0.4f}));
    EXPECT_EQ(Normalization{}.kind, NormKind::kScale01);
}

}  // namespace
}  // namespace dt

// SPDX-License-Identifier: MIT
// limit_dataset and keep_fraction_of_class (datasets/subset.h): which examples remain, in which
// order, with their pixels; the rounding of the kept count; and the errors.
#include "datasets/subset.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "engine/core/error.h"
#include "tests/support/errors.h"

namespace dt {
namespace {

using test::has, test::message_of;

// One 1x1x2 image per label; example i has pixels {i, 100 + i}, so each example is recognisable.
Dataset labelled(const std::vector<int32_t>& labels, int classes = 4) {
    Dataset ds;
    ds.name = "toy/train";
    ds.size = static_cast<int64_t>(labels.size());
    ds.channels = 1;
    ds.height = 1;
    ds.width = 2;
    ds.num_classes = classes;
    ds.labels = labels;
    for (std::size_t i = 0; i < labels.size(); ++i) {
        ds.pixels.push_back(static_cast<uint8_t>(i));
        ds.pixels.push_back(static_cast<uint8_t>(100 + i));
    }
    return ds;
}

/// The original index of every remaining example (read back from its first pixel).
std::vector<int64_t> kept_ids(const Dataset& ds) {
    std::vector<int64_t> ids;
    for (int64_t i = 0; i < ds.size; ++i) {
        ids.push_back(ds.pixels[static_cast<std::size_t>(2 * i)]);
        EXPECT_EQ(ds.pixels[static_cast<std::size_t>(2 * i + 1)], 100 + ids.back()) << i;
    }
    return ids;
}

TEST(LimitDataset, KeepsTheFirstExamples) {
    Dataset ds = labelled({0, 1, 2, 3, 0, 1});
    limit_dataset(ds, 4);
    EXPECT_EQ(ds.size, 4);
    EXPECT_EQ(kept_ids(ds), (std::vector<int64_t>{0, 1, 2, 3}));
    EXPECT_EQ(ds.labels, (std::vector<int32_t>{0, 1, 2, 3}));
}

TEST(LimitDataset, ZeroOrAtLeastTheSizeKeepsAll) {
    for (int64_t limit : {0, 6, 7, 1000}) {
        Dataset ds = labelled({0, 1, 2, 3, 0, 1});
        limit_dataset(ds, limit);
        EXPECT_EQ(ds.size, 6) << limit;
        EXPECT_EQ(kept_ids(ds), (std::vector<int64_t>{0, 1, 2, 3, 4, 5})) << limit;
    }
}

TEST(LimitDataset, NegativeLimitIsRejected) {
    Dataset ds = labelled({0, 1});
    const std::string m = message_of<ValueError>([&] { limit_dataset(ds, -1); });
    EXPECT_TRUE(has(m, "toy/train")) << m;
    EXPECT_TRUE(has(m, "-1")) << m;
}

TEST(KeepFractionOfClass, KeepsTheFirstCeilOfTheClassInDataSetOrder) {
    // Class 1 at indices 1, 3, 4, 6, 8 (count 5): fraction 0.5 keeps ceil(2.5) = 3 of them.
    Dataset ds = labelled({0, 1, 2, 1, 1, 0, 1, 3, 1});
    keep_fraction_of_class(ds, 1, 0.5);
    EXPECT_EQ(kept_ids(ds), (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 7}));
    EXPECT_EQ(ds.labels, (std::vector<int32_t>{0, 1, 2, 1, 1, 0, 3}));
    EXPECT_EQ(ds.size, 7);
}

TEST(KeepFractionOfClass, RoundingOfTheKeptCount) {
    auto kept_of_class = [](int count, double fraction) {
        Dataset ds = labelled(std::vector<int32_t>(static_cast<std::size_t>(count), 2));
        keep_fraction_of_class(ds, 2, fraction);
        return ds.size;
    };
    EXPECT_EQ(kept_of_class(100, 0.07), 7);  // 0.07 * 100 = 7.000000000000001 in double: keeps 7
    EXPECT_EQ(kept_of_class(25, 0.28), 7);   // 7.000000000000001 again
    EXPECT_EQ(kept_of_class(31, 0.1), 4);   // ceil(3.1)
    EXPECT_EQ(kept_of_class(10, 1.0), 10);  // all
    EXPECT_EQ(kept_of_class(10, 0.01), 1);  // ceil(0.1)
    EXPECT_EQ(kept_of_class(10, 1e-12), 0); // below the 1e-9 tolerance: none
    EXPECT_EQ(kept_of_class(0, 0.5), 0);
}

TEST(KeepFractionOfClass, OtherClassesAreUntouched) {
    Dataset ds = labelled({3, 3, 0, 3});
    keep_fraction_of_class(ds, 1, 0.25);  // no example of class 1: nothing changes
    EXPECT_EQ(kept_ids(ds), (std::vector<int64_t>{0, 1, 2, 3}));
}

TEST(KeepFractionOfClass, RejectsAMissingClassOrABadFraction) {
    Dataset ds = labelled({0, 1, 2, 3});
    std::string m = message_of<ValueError>([&] { keep_fraction_of_class(ds, 4, 0.5); });
    EXPECT_TRUE(has(m, "class 4 does not exist in toy/train (classes 0..3)")) << m;
    EXPECT_THROW(keep_fraction_of_class(ds, -1, 0.5), ValueError);
    for (double bad : {0.0, -0.5, 1.5}) {
        m = message_of<ValueError>([&] { keep_fraction_of_class(ds, 1, bad); });
        EXPECT_TRUE(has(m, "(0, 1]")) << bad << ": " << m;
    }
    EXPECT_EQ(ds.size, 4);  // a rejected call changes nothing
}

}  // namespace
}  // namespace dt

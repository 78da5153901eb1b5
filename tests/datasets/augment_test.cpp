// SPDX-License-Identifier: MIT
// Augmentation: the draws follow the documented Philox formulas and depend only on (seed,
// sample, epoch); crop and flip move the pixels of a hand-made image exactly where the formula
// in augment.h says, with zero padding; uint8 and float paths agree.
#include "datasets/augment.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "engine/core/error.h"
#include "kernels/common/philox.h"

namespace dt {
namespace {

constexpr int C = 2, H = 3, W = 4;

// Pixel (c, y, x) = 1 + c*12 + y*4 + x: every value distinct and nonzero (0 marks padding).
std::vector<uint8_t> image() {
    std::vector<uint8_t> v(C * H * W);
    for (int i = 0; i < C * H * W; ++i) v[i] = static_cast<uint8_t>(1 + i);
    return v;
}

uint8_t at(const std::vector<uint8_t>& v, int c, int y, int x) { return v[(c * H + y) * W + x]; }

std::vector<uint8_t> apply(const AugmentDraw& d, int p) {
    std::vector<uint8_t> out(C * H * W, 0xEE);
    augment_apply(d, p, image().data(), out.data(), C, H, W);
    return out;
}

TEST(Augment, CropShiftsDownRightWithZeroPadding) {
    // Offsets (0, 0) into the 1-padded image: output (y, x) shows input (y-1, x-1).
    const auto out = apply({0, 0, false}, 1);
    const auto src = image();
    for (int c = 0; c < C; ++c) {
        for (int x = 0; x < W; ++x) EXPECT_EQ(at(out, c, 0, x), 0);
        for (int y = 0; y < H; ++y) EXPECT_EQ(at(out, c, y, 0), 0);
        for (int y = 1; y < H; ++y) {
            for (int x = 1; x < W; ++x) EXPECT_EQ(at(out, c, y, x), at(src, c, y - 1, x - 1));
        }
    }
}

TEST(Augment, CropShiftsUp) {
    // Offsets (2, 1) with p = 1: output (y, x) shows input (y+1, x); the last row is padding.
    const auto out = apply({2, 1, false}, 1);
    const auto src = image();
    for (int c = 0; c < C; ++c) {
        for (int y = 0; y < H; ++y) {
            for (int x = 0; x < W; ++x) {
                EXPECT_EQ(at(out, c, y, x), y + 1 < H ? at(src, c, y + 1, x) : 0);
            }
        }
    }
}

TEST(Augment, FlipMirrorsColumns) {
    const auto out = apply({0, 0, true}, 0);
    const auto src = image();
    for (int c = 0; c < C; ++c) {
        for (int y = 0; y < H; ++y) {
            for (int x = 0; x < W; ++x) EXPECT_EQ(at(out, c, y, x), at(src, c, y, W - 1 - x));
        }
    }
}

TEST(Augment, CropThenFlip) {
    // p = 2, offsets (3, 0), flip: output (y, x) shows input (y+1, (W-1-x)-2).
    const auto out = apply({3, 0, true}, 2);
    const auto src = image();
    EXPECT_EQ(at(out, 1, 0, 0), at(src, 1, 1, 1));
    EXPECT_EQ(at(out, 1, 0, 1), at(src, 1, 1, 0));
    EXPECT_EQ(at(out, 1, 0, 2), 0);
    EXPECT_EQ(at(out, 0, 1, 0), at(src, 0, 2, 1));
    EXPECT_EQ(at(out, 0, 2, 0), 0);
}

TEST(Augment, CentredDrawIsIdentity) {
    EXPECT_EQ(apply({2, 2, false}, 2), image());
    std::vector<uint8_t> out(C * H * W);
    augment_image(AugmentConfig{}, 3, 5, image().data(), out.data(), C, H, W);
    EXPECT_EQ(out, image());
}

TEST(Augment, DrawsFollowTheDocumentedFormula) {
    using namespace kernels::common;
    const AugmentConfig cfg{4, true, 777};
    for (int64_t id : {0, 1, 12345}) {
        for (uint64_t epoch : {0u, 9u}) {
            Philox4 r = philox_draw(777, RngStream::kAugment, static_cast<uint64_t>(id),
                                    static_cast<uint32_t>(epoch));
            AugmentDraw d = augment_draw(cfg, epoch, id);
            EXPECT_EQ(d.dy, static_cast<int>((uint64_t{r.v[0]} * 9) >> 32));
            EXPECT_EQ(d.dx, static_cast<int>((uint64_t{r.v[1]} * 9) >> 32));
            EXPECT_EQ(d.flip, (r.v[2] >> 31) == 1u);
        }
    }
}

TEST(Augment, DrawRangesAndFrequencies) {
    const AugmentConfig cfg{2, true, 5};
    std::set<int> dys, dxs;
    int flips = 0;
    for (int64_t id = 0; id < 4000; ++id) {
        AugmentDraw d = augment_draw(cfg, 1, id);
        ASSERT_TRUE(d.dy >= 0 && d.dy <= 4 && d.dx >= 0 && d.dx <= 4);
        dys.insert(d.dy);
        dxs.insert(d.dx);
        flips += d.flip;
    }
    EXPECT_EQ(dys.size(), 5u);
    EXPECT_EQ(dxs.size(), 5u);
    EXPECT_NEAR(flips, 2000, 150);
}

TEST(Augment, DeterministicPerSampleAndEpoch) {
    const AugmentConfig cfg{4, true, 123};
    std::vector<uint8_t> a(C * H * W), b(C * H * W);
    augment_image(cfg, 2, 17, image().data(), a.data(), C, H, W);
    augment_image(cfg, 2, 17, image().data(), b.data(), C, H, W);
    EXPECT_EQ(a, b);
    int differ = 0;
    for (uint64_t e = 0; e < 20; ++e) {
        AugmentDraw x = augment_draw(cfg, e, 17), y = augment_draw(cfg, e + 1, 17);
        differ += x.dy != y.dy || x.dx != y.dx || x.flip != y.flip;
    }
    EXPECT_GT(differ, 10);
}

TEST(Augment, FlagsDoNotDisturbEachOther) {
    for (int64_t id = 0; id < 50; ++id) {
        AugmentDraw both = augment_draw({3, true, 8}, 4, id);
        AugmentDraw crop = augment_draw({3, false, 8}, 4, id);
        AugmentDraw flip = augment_draw({0, true, 8}, 4, id);
        EXPECT_EQ(both.dy, crop.dy);
        EXPECT_EQ(both.dx, crop.dx);
        EXPECT_FALSE(crop.flip);
        EXPECT_EQ(both.flip, flip.flip);
        EXPECT_EQ(flip.dy, 0);
        EXPECT_EQ(flip.dx, 0);
    }
}

TEST(Augment, FloatPathMatchesBytePath) {
    const AugmentConfig cfg{2, true, 31};
    std::vector<float> fsrc(C * H * W), fout(C * H * W);
    for (int i = 0; i < C * H * W; ++i) fsrc[i] = static_cast<float>(image()[i]);
    std::vector<uint8_t> bout(C * H * W);
    for (int64_t id = 0; id < 20; ++id) {
        augment_image(cfg, 0, id, image().data(), bout.data(), C, H, W);
        augment_image(cfg, 0, id, fsrc.data(), fout.data(), C, H, W);
        for (int i = 0; i < C * H * W; ++i) ASSERT_EQ(fout[i], static_cast<float>(bout[i]));
    }
}

TEST(Augment, Validation) {
    std::vector<uint8_t> out(C * H * W);
    EXPECT_THROW(augment_image({-1, false, 0}, 0, 0, image().data(), out.data(), C, H, W),
                 ValueError);
    EXPECT_THROW(augment_draw({1, false, 0}, uint64_t{1} << 32, 0), ValueError);
}

}  // namespace
}  // namespace dt

// SPDX-License-Identifier: MIT
// Random crop + horizontal flip of one CHW image (formulas in augment.h). The copy is a gather:
// each output pixel reads at most one input pixel, so there is no arithmetic to order.
#include "datasets/augment.h"

#include "engine/core/error.h"
#include "kernels/common/philox.h"

namespace dt {

namespace {

// Multiply-high of a 32-bit word by n: uniform in [0, n), bias below n / 2^32.
int below32(uint32_t word, int n) {
    return static_cast<int>((static_cast<uint64_t>(word) * static_cast<uint64_t>(n)) >> 32);
}

void check_config(const AugmentConfig& cfg, uint64_t epoch) {
    DT_CHECK_VALUE(cfg.crop_padding >= 0, "augment: crop_padding must be >= 0, got ",
                   cfg.crop_padding, " (hint: 0 disables cropping)");
    DT_CHECK_VALUE(epoch <= 0xFFFFFFFFull, "augment: epoch ", epoch,
                   " does not fit the 32-bit Philox sub-counter (expected < 2^32)");
}

template <typename T>
void apply(const AugmentDraw& d, int p, const T* src, T* dst, int C, int H, int W) {
    for (int c = 0; c < C; ++c) {
        const T* s = src + static_cast<int64_t>(c) * H * W;
        T* o = dst + static_cast<int64_t>(c) * H * W;
        for (int y = 0; y < H; ++y) {
            const int sy = y + d.dy - p;
            for (int x = 0; x < W; ++x) {
                const int sx = (d.flip ? W - 1 - x : x) + d.dx - p;
                const bool inside = sy >= 0 && sy < H && sx >= 0 && sx < W;
                o[y * W + x] = inside ? s[sy * W + sx] : T(0);
            }
        }
    }
}

}  // namespace

AugmentDraw augment_draw(const AugmentConfig& cfg, uint64_t epoch, int64_t sample_id) {
    using kernels::common::philox_draw;
    using kernels::common::RngStream;
    check_config(cfg, epoch);
    AugmentDraw d;
    d.dy = d.dx = cfg.crop_padding;  // centred: the identity crop
    if (!cfg.enabled()) return d;
    auto r = philox_draw(cfg.seed, RngStream::kAugment, static_cast<uint64_t>(sample_id),
                         static_cast<uint32_t>(epoch));
    if (cfg.crop_padding > 0) {
        d.dy = below32(r.v[0], 2 * cfg.crop_padding + 1);
        d.dx = below32(r.v[1], 2 * cfg.crop_padding + 1);
    }
    d.flip = cfg.hflip && (r.v[2] >> 31) == 1u;
    return d;
}

void augment_apply(const AugmentDraw& d, int padding, const uint8_t* src, uint8_t* dst, int C,
                   int H, int W) {
    apply(d, padding, src, dst, C, H, W);
}

void augment_apply(const AugmentDraw& d, int padding, const float* src, float* dst, int C, int H,
                   int W) {
    apply(d, padding, src, dst, C, H, W);
}

void augment_image(const AugmentConfig& cfg, uint64_t epoch, int64_t sample_id, const uint8_t* src,
                   uint8_t* dst, int C, int H, int W) {
    apply(augment_draw(cfg, epoch, sample_id), cfg.crop_padding, src, dst, C, H, W);
}

void augment_image(const AugmentConfig& cfg, uint64_t epoch, int64_t sample_id, const float* src,
                   float* dst, int C, int H, int W) {
    apply(augment_draw(cfg, epoch, sample_id), cfg.crop_padding, src, dst, C, H, W);
}

}  // namespace dt

// SPDX-License-Identifier: MIT
// Training-time augmentation of one CHW image: random crop with zero padding, then random
// horizontal flip (torchvision RandomCrop(size, padding=p) followed by RandomHorizontalFlip()).
// Every draw is keyed by the sample, never by the thread or the call order:
//   r    = philox_draw(seed, RngStream::kAugment, index = sample_id, sub = epoch)
//   dy   = (uint64(r.v[0]) * (2p+1)) >> 32       // in [0, 2p], 32-bit multiply-high
//   dx   = (uint64(r.v[1]) * (2p+1)) >> 32
//   flip = (r.v[2] >> 31) == 1                    // probability 1/2
// The three draws come from separate words, so enabling hflip does not change the crop offsets.
// Output pixel (c, y, x), with x' = flip ? W-1-x : x:
//   out[c][y][x] = src[c][y + dy - p][x' + dx - p]  if inside the image, else 0.
#pragma once
#include <cstdint>

namespace dt {

struct AugmentConfig {
    int crop_padding = 0;  // p: pad by p on every side, crop back to H x W; 0 = no crop
    bool hflip = false;    // mirror left-right with probability 1/2
    uint64_t seed = 0;     // the augmentation seed (RngStream::kAugment)

    bool enabled() const { return crop_padding > 0 || hflip; }
};

/// The random choices for one (sample, epoch); dy = dx = p and flip = false when disabled.
struct AugmentDraw {
    int dy = 0, dx = 0;  // crop offsets into the padded image, in [0, 2p]
    bool flip = false;
};

/// The draws of (sample_id, epoch) under `cfg` (formulas in the file header).
AugmentDraw augment_draw(const AugmentConfig& cfg, uint64_t epoch, int64_t sample_id);

/// Applies a draw to one image: src and dst are (C, H, W) and must not overlap.
void augment_apply(const AugmentDraw& d, int padding, const uint8_t* src, uint8_t* dst, int C,
                   int H, int W);
void augment_apply(const AugmentDraw& d, int padding, const float* src, float* dst, int C, int H,
                   int W);

/// augment_draw + augment_apply. Throws ValueError for a negative padding or epoch >= 2^32.
void augment_image(const AugmentConfig& cfg, uint64_t epoch, int64_t sample_id, const uint8_t* src,
                   uint8_t* dst, int C, int H, int W);
void augment_image(const AugmentConfig& cfg, uint64_t epoch, int64_t sample_id, const float* src,
                   float* dst, int C, int H, int W);

}  // namespace dt

// SPDX-License-Identifier: MIT
// Philox-4x32-10 (Salmon et al., SC'11): a counter-based generator. A draw is a pure function of
// (key, counter), so a value depends on (seed, stream, index), never on which thread asks first.
// detrain keys every draw as  key = seed (64 bits),  counter = (index lo, index hi, stream, sub):
//   stream: the purpose (RngStream below), so streams never overlap even with equal seeds;
//   index:  what is drawn for (element number, sample id, epoch, ... as documented by the user);
//   sub:    a further coordinate (e.g. epoch) where index alone is not enough.
#pragma once
#include "kernels/common/hd.h"

namespace dt::kernels::common {

/// Purposes of random draws; each has its own seed in the noise configuration.
enum class RngStream : uint32_t {
    kInit = 1,
    kShuffle = 2,
    kAugment = 3,
    kDropout = 4,
    kPermute = 5,      // the `permuted` accumulation order
    kWithinBatch = 6,  // --shuffle-within-batch
    kGenerate = 7,     // detrain generate's sampling (models/generate.h)
    kTest = 99,
};

struct Philox4 {
    uint32_t v[4];
};

DT_HD void philox_mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
    uint64_t p = static_cast<uint64_t>(a) * static_cast<uint64_t>(b);
    hi = static_cast<uint32_t>(p >> 32);
    lo = static_cast<uint32_t>(p);
}

/// Ten rounds of Philox-4x32 on counter c with key k.
DT_HD Philox4 philox4x32_10(Philox4 c, uint32_t k0, uint32_t k1) {
    constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
    constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
    for (int round = 0; round < 10; ++round) {
        uint32_t hi0, lo0, hi1, lo1;
        philox_mulhilo(kM0, c.v[0], hi0, lo0);
        philox_mulhilo(kM1, c.v[2], hi1, lo1);
        Philox4 n;
        n.v[0] = hi1 ^ c.v[1] ^ k0;
        n.v[1] = lo1;
        n.v[2] = hi0 ^ c.v[3] ^ k1;
        n.v[3] = lo0;
        c = n;
        k0 += kW0;
        k1 += kW1;
    }
    return c;
}

/// Four independent 32-bit words for (seed, stream, index, sub).
DT_HD Philox4 philox_draw(uint64_t seed, RngStream stream, uint64_t index, uint32_t sub = 0) {
    Philox4 c;
    c.v[0] = static_cast<uint32_t>(index);
    c.v[1] = static_cast<uint32_t>(index >> 32);
    c.v[2] = static_cast<uint32_t>(stream);
    c.v[3] = sub;
    return philox4x32_10(c, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

/// Uniform float in [0, 1) from the top 24 bits of a word (exact: multiples of 2^-24).
DT_HD float uniform01(uint32_t word) {
    return static_cast<float>(word >> 8) * (1.0f / 16777216.0f);
}

/// Uniform integer in [0, n) from a 64-bit draw (multiply-high; bias below 2^-32 for n < 2^32).
DT_HD uint64_t uniform_below(uint32_t lo, uint32_t hi, uint64_t n) {
    uint64_t r = (static_cast<uint64_t>(hi) << 32) | lo;
    return static_cast<uint64_t>((static_cast<unsigned __int128>(r) * n) >> 64);
}

}  // namespace dt::kernels::common

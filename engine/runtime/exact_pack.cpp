// SPDX-License-Identifier: MIT
#include "engine/runtime/exact_pack.h"

#include <cstring>

#include "engine/runtime/message_check.h"

namespace dt {

namespace c = kernels::common;

namespace {

/// x mod M for M = 2^61 - 1 (x < 2^122).
uint64_t mod_prime(unsigned __int128 x) {
    uint64_t r = static_cast<uint64_t>(x & kCheckPrime) + static_cast<uint64_t>(x >> 61);
    r = (r & kCheckPrime) + (r >> 61);
    return r >= kCheckPrime ? r - kCheckPrime : r;
}

}  // namespace

uint64_t packed_check(const PackedExactAcc* p, int64_t n, int64_t first) {
    uint64_t s = 0;
    for (int64_t k = 0; k < n; ++k) {
        // The value sum_j digit_j 2^(32 j) mod M, digits 0..7 and the signed top limb.
        const c::ExactAcc a = exact_unpack(p[k]);
        uint64_t v = 0, pow = 1;  // 2^(32 j) mod M
        for (int j = 0; j + 1 < c::kExactLimbs; ++j) {
            v = check_prime_add(v, mod_prime(static_cast<unsigned __int128>(a.limb[j]) * pow));
            pow = mod_prime(static_cast<unsigned __int128>(pow) << 32);
        }
        const int64_t top = a.limb[c::kExactLimbs - 1];
        const uint64_t t = mod_prime(static_cast<unsigned __int128>(top < 0 ? -top : top) * pow);
        v = top < 0 ? check_prime_add(v, t == 0 ? 0 : kCheckPrime - t) : check_prime_add(v, t);
        const uint64_t w = check_weight(first + k) % kCheckPrime;
        s = check_prime_add(s, mod_prime(static_cast<unsigned __int128>(w) * v));
    }
    return s;
}

bool exact_bits_shifted(const c::ExactAcc& acc, int32_t* lo_out, int32_t* hi_out, int64_t* own) {
    // The normalised limbs in a local array (registers), then masks of the nonzero and the
    // non-sign-fill digits instead of scans with early exits.
    constexpr int kTop = c::kExactLimbs - 1;
    int64_t d[c::kExactLimbs];
    for (int k = 0; k < c::kExactLimbs; ++k) d[k] = acc.limb[k];
    c::exact_normalise_limbs(d);  // d[0..7] digits in [0, 2^32), d[8] the signed rest
    const int64_t top = d[kTop];
    const bool negative = top < 0;
    const uint64_t flip = negative ? 0xffffffffu : 0u;
    uint32_t nonzero = 0, informative = 0;  // digits != 0, digits != the sign's fill
    for (int k = 0; k < kTop; ++k) {
        nonzero |= static_cast<uint32_t>(d[k] != 0) << k;
        informative |= static_cast<uint32_t>((static_cast<uint64_t>(d[k]) ^ flip) != 0) << k;
    }
    *own = 0, *lo_out = 0, *hi_out = 0;
    int32_t lo = 0;
    if (nonzero != 0) {
        const int k = __builtin_ctz(nonzero);
        lo = 32 * k + __builtin_ctzll(static_cast<uint64_t>(d[k]));
    } else if (top != 0) {
        lo = 32 * kTop + __builtin_ctzll(static_cast<uint64_t>(top));
    } else {
        return false;  // zero
    }
    // hi: the bit length of the value, or for a negative one of its complement ~v = -v - 1,
    // plus one (|v| = ~v + 1 <= 2^length).
    const uint64_t t = static_cast<uint64_t>(negative ? ~top : top);
    int length = 0;
    if (t != 0) {
        length = 32 * kTop + 64 - __builtin_clzll(t);
    } else if (informative != 0) {
        const int k = 31 - __builtin_clz(informative);
        length = 32 * k + 64 - __builtin_clzll(static_cast<uint64_t>(d[k]) ^ flip);
    }
    const int32_t hi = length + (negative ? 1 : 0);
    *lo_out = lo, *hi_out = hi;
    if (hi - lo > 63) return true;
    // value >> lo: three digits from lo's, sign-filled past the top limb.
    const auto digit = [&](int k) -> uint64_t {
        if (k < kTop) return static_cast<uint64_t>(d[k]);
        if (k == kTop) return static_cast<uint64_t>(top) & 0xffffffffu;
        if (k == kTop + 1) return static_cast<uint64_t>(top) >> 32;
        return flip;
    };
    const int k = lo / 32;
    const unsigned __int128 w = static_cast<unsigned __int128>(digit(k)) |
                                (static_cast<unsigned __int128>(digit(k + 1)) << 32) |
                                (static_cast<unsigned __int128>(digit(k + 2)) << 64);
    *own = static_cast<int64_t>(static_cast<uint64_t>(w >> (lo % 32)));
    return true;
}

c::ExactAcc exact_from_scaled(int64_t s, int32_t lo) {
    // s 2^(lo % 32) (< 2^94 in magnitude) as two 32-bit digits and a signed rest, from limb
    // lo / 32; past limb 7 the rest goes to the signed top limb.
    constexpr int kTop = c::kExactLimbs - 1;
    c::ExactAcc a;
    c::exact_init(a);
    __int128 v = static_cast<__int128>(s) * (static_cast<__int128>(1) << (lo % 32));
    int k = lo / 32;
    for (; k < kTop && k < lo / 32 + 2; ++k, v >>= 32)  // arithmetic shift: floor
        a.limb[k] = static_cast<int64_t>(static_cast<uint64_t>(v) & 0xffffffffu);
    a.limb[k] += static_cast<int64_t>(v);  // the rest fits: values stay below 2^(256 + 63)
    return a;
}

float exact_value_scaled(int64_t s, int32_t lo) {
    if (s == 0) return 0.0f;  // exact_value's +0
    // ORDER: the one rounding: s to 24 bits (RNE), then a power of two that only moves the
    // exponent, where the result is a normal float.
    const float f = static_cast<float>(s);
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    const int64_t e = static_cast<int64_t>((u >> 23) & 0xffu) + lo - 149;
    if (e >= 1 && e <= 254) {
        u = (u & 0x807fffffu) | (static_cast<uint32_t>(e) << 23);
        float out;
        std::memcpy(&out, &u, sizeof out);
        return out;
    }
    if (e > 254) return s < 0 ? -__builtin_inff() : __builtin_inff();  // beyond the range
    // Subnormal results: exact_value's own rounding of the accumulator.
    return c::exact_value(exact_from_scaled(s, lo));
}

void exact_packed_merge(const PackedExactAcc* in, PackedExactAcc* inout, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        // ORDER: none (integer limbs: 2 units of headroom used, normalised by exact_pack).
        c::ExactAcc a = exact_unpack(inout[i]);
        c::exact_merge(a, exact_unpack(in[i]));
        inout[i] = exact_pack(a);
    }
}

}  // namespace dt

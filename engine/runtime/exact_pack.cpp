// SPDX-License-Identifier: MIT
#include "engine/runtime/exact_pack.h"

#include <cstring>

#include "engine/runtime/message_check.h"

namespace dt {

namespace c = kernels::common;

namespace {

/// 32-bit digit k (k >= 0) of a normalised accumulator's two's-complement value: limbs 0..7,
/// then limb 8's two halves, then its sign.
uint64_t digit(const c::ExactAcc& a, int k) {
    if (k < c::kExactLimbs - 1) return static_cast<uint64_t>(a.limb[k]) & 0xffffffffu;
    const auto top = static_cast<uint64_t>(a.limb[c::kExactLimbs - 1]);
    if (k == c::kExactLimbs - 1) return top & 0xffffffffu;
    if (k == c::kExactLimbs) return top >> 32;
    return a.limb[c::kExactLimbs - 1] < 0 ? 0xffffffffu : 0u;
}

}  // namespace

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

ExactBits exact_bits(const c::ExactAcc& a) {
    // Limbs 0..7 are digits in [0, 2^32); limb 8 carries the signed rest (normalised).
    constexpr int kTop = c::kExactLimbs - 1;
    ExactBits b;
    const int64_t top = a.limb[kTop];
    int k = 0;
    while (k < kTop && a.limb[k] == 0) ++k;
    if (k < kTop) {
        b.lo = 32 * k + __builtin_ctzll(static_cast<uint64_t>(a.limb[k]));
    } else if (top != 0) {
        b.lo = 32 * kTop + __builtin_ctzll(static_cast<uint64_t>(top));
    } else {
        return b;  // zero
    }
    b.zero = false;
    // hi: the bit length of the value, or for a negative one of its complement ~v = -v - 1,
    // plus one (|v| = ~v + 1 <= 2^length).
    const bool negative = top < 0;
    const uint64_t t = static_cast<uint64_t>(negative ? ~top : top);
    int length = 0;
    if (t != 0) {
        length = 32 * kTop + 64 - __builtin_clzll(t);
    } else {
        const uint64_t flip = negative ? 0xffffffffu : 0u;
        for (int j = kTop - 1; j >= 0; --j) {
            const uint64_t d = static_cast<uint64_t>(a.limb[j]) ^ flip;
            if (d != 0) {
                length = 32 * j + 64 - __builtin_clzll(d);
                break;
            }
        }
    }
    b.hi = length + (negative ? 1 : 0);
    return b;
}

bool exact_bits_shifted(const c::ExactAcc& acc, int32_t* lo_out, int32_t* hi_out, int64_t* own) {
    // Normalised digits in registers (exact_normalise_limbs's carries), then masks of the
    // nonzero and the non-all-ones digits instead of scans with early exits.
    constexpr int kTop = c::kExactLimbs - 1;
    uint64_t d[kTop];
    int64_t carry = 0;
    for (int k = 0; k < kTop; ++k) {
        const int64_t v = acc.limb[k] + carry;
        carry = v >> 32;  // floor: arithmetic shift
        d[k] = static_cast<uint64_t>(v) & 0xffffffffu;
    }
    const int64_t top = acc.limb[kTop] + carry;
    const bool negative = top < 0;
    const uint64_t flip = negative ? 0xffffffffu : 0u;
    uint32_t nonzero = 0, informative = 0;  // digits != 0, digits != the sign's fill
    for (int k = 0; k < kTop; ++k) {
        nonzero |= static_cast<uint32_t>(d[k] != 0) << k;
        informative |= static_cast<uint32_t>((d[k] ^ flip) != 0) << k;
    }
    int32_t lo = 0;
    *own = 0, *lo_out = 0, *hi_out = 0;
    if (nonzero != 0) {
        const int k = __builtin_ctz(nonzero);
        lo = 32 * k + __builtin_ctzll(d[k]);
    } else if (top != 0) {
        lo = 32 * kTop + __builtin_ctzll(static_cast<uint64_t>(top));
    } else {
        return false;  // zero
    }
    const uint64_t t = static_cast<uint64_t>(negative ? ~top : top);
    int length = 0;
    if (t != 0) {
        length = 32 * kTop + 64 - __builtin_clzll(t);
    } else if (informative != 0) {
        const int k = 31 - __builtin_clz(informative);
        length = 32 * k + 64 - __builtin_clzll(d[k] ^ flip);
    }
    const int32_t hi = length + (negative ? 1 : 0);
    *lo_out = lo, *hi_out = hi;
    if (hi - lo > 63) return true;
    // value >> lo: three digits from lo's, sign-filled past the top limb.
    const auto digit = [&](int k) -> uint64_t {
        if (k < kTop) return d[k];
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

int64_t exact_shifted(const c::ExactAcc& a, int32_t lo) {
    const int k = lo / 32;
    const unsigned __int128 w = static_cast<unsigned __int128>(digit(a, k)) |
                                (static_cast<unsigned __int128>(digit(a, k + 1)) << 32) |
                                (static_cast<unsigned __int128>(digit(a, k + 2)) << 64);
    return static_cast<int64_t>(static_cast<uint64_t>(w >> (lo % 32)));
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
    // Subnormal results: the accumulator, then exact_value's own rounding. s * 2^lo below 2^-126
    // means lo < 127: every limb index below is in range.
    c::ExactAcc acc;
    c::exact_init(acc);
    const int k = lo / 32;
    const __int128 v = static_cast<__int128>(s) * (static_cast<__int128>(1) << (lo % 32));
    acc.limb[k] += static_cast<int64_t>(static_cast<uint64_t>(v) & 0xffffffffu);
    acc.limb[k + 1] += static_cast<int64_t>(static_cast<uint64_t>(v >> 32) & 0xffffffffu);
    acc.limb[k + 2] += static_cast<int64_t>(v >> 64);
    return c::exact_value(acc);
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

// SPDX-License-Identifier: MIT
// common::Divisor against the plain division: every divisor up to 4096 and every power of two
// and its neighbours up to 2^33 (the multiply's shifts change there), with the numerators where
// a wrong multiplier shows first (multiples of d and their neighbours, the top of the 32-bit
// range) plus random ones; numerators and divisors from 2^32 up (the plain division's path).
// The device runs the same code with __umulhi (tests/kernels/cuda/accum_device_test.cu).
#include "kernels/common/divisor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace dt::kernels::common {
namespace {

std::vector<int64_t> divisors() {
    std::vector<int64_t> ds;
    for (int64_t d = 1; d <= 4096; ++d) ds.push_back(d);
    for (int k = 13; k <= 33; ++k)
        for (int64_t e : {-1, 0, 1}) ds.push_back((int64_t{1} << k) + e);
    for (int64_t d : {int64_t{641}, int64_t{6700417}, int64_t{3} * 1000 * 1000 * 1000,
                      int64_t{4294967291}, int64_t{1} << 40, int64_t{12345678901}})
        ds.push_back(d);
    return ds;
}

std::vector<int64_t> numerators(int64_t d, std::mt19937_64& rng) {
    const int64_t top = (int64_t{1} << 32) - 1;
    std::vector<int64_t> ns = {0,
                               1,
                               2,
                               top,
                               top - 1,
                               top + 1,
                               int64_t{1} << 31,
                               (int64_t{1} << 31) - 1,
                               int64_t{1} << 40,
                               INT64_MAX};
    for (int64_t k : {int64_t{1}, int64_t{2}, int64_t{3}, top / d, top / d - 1, top / d + 1})
        for (int64_t e : {-1, 0, 1})
            if (k * d + e >= 0 && k <= INT64_MAX / d - 1) ns.push_back(k * d + e);
    for (int i = 0; i < 64; ++i) ns.push_back(static_cast<int64_t>(rng() >> 32));
    for (int i = 0; i < 8; ++i) ns.push_back(static_cast<int64_t>(rng() >> 1));
    return ns;
}

TEST(Divisor, QuotientAndModuloAreThePlainDivisions) {
    std::mt19937_64 rng(20261127);
    for (const int64_t d : divisors()) {
        const Divisor v = make_divisor(d);
        for (const int64_t n : numerators(d, rng)) {
            ASSERT_EQ(quotient(n, v), n / d) << n << " / " << d;
            ASSERT_EQ(modulo(n, v), n % d) << n << " % " << d;
        }
    }
}

TEST(Divisor, EveryNumeratorBelowAMillionForSmallDivisors) {
    for (const int64_t d : {1, 3, 7, 10, 49, 196, 641, 1000, 3136}) {
        const Divisor v = make_divisor(d);
        for (int64_t n = 0; n < 1000000; ++n) ASSERT_EQ(quotient(n, v), n / d) << n << " / " << d;
    }
}

TEST(Divisor, ChannelOfIsTheChannelOfAnElement) {
    const int64_t len = 49, channels = 6;
    const ChannelOf channel = make_channel_of(len, channels);
    for (int64_t i = 0; i < 3 * channels * len; ++i) EXPECT_EQ(channel(i), (i / len) % channels);
}

}  // namespace
}  // namespace dt::kernels::common

// SPDX-License-Identifier: MIT
// Every NaN is one value where detrain compares or hashes bits (engine/core/nan_bits.h): the
// x86 NaN 0xffc00000 and the GPU's 0x7fffffff give the same weights_sha256, the same trail hash
// and pass bitwise_equal, while every other bit still counts.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "apps/audit/audit_compare.h"
#include "engine/autograd/trace.h"
#include "engine/core/nan_bits.h"
#include "engine/io/sha256.h"
#include "tests/support/compare.h"

namespace dt {
namespace {

float from_bits(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// The NaNs real hardware makes: x86's default NaN, a GPU's, a signalling and a payload NaN.
const std::vector<uint32_t> kNans = {0xffc00000u, 0x7fffffffu, 0x7f800001u, 0xffa5a5a5u};

std::vector<float> with_nan(uint32_t nan) { return {1.0f, from_bits(nan), -0.0f, 2.5f}; }

TEST(NanBits, EveryNanIsOneValueAndNothingElseIs) {
    for (uint32_t u : kNans) {
        EXPECT_TRUE(nan_bits(u));
        EXPECT_EQ(canonical_bits(u), kCanonicalNanBits);
    }
    for (uint32_t u : {0x7f800000u, 0xff800000u, 0x00000000u, 0x80000000u, 0x7f7fffffu, 1u})
        EXPECT_EQ(canonical_bits(u), u) << std::hex << u;  // infinities, zeros, numbers
    EXPECT_TRUE(same_bits(from_bits(0xffc00000u), from_bits(0x7fffffffu)));
    EXPECT_FALSE(same_bits(0.0f, -0.0f));
    EXPECT_FALSE(same_bits(from_bits(0x7fc00000u), from_bits(0x7f800000u)));  // NaN vs inf
}

TEST(NanBits, BitwiseEqualTakesAnyNanForAnyOther) {
    for (uint32_t u : kNans) EXPECT_TRUE(test::bitwise_equal(with_nan(0xffc00000u), with_nan(u)));
    std::vector<float> number = with_nan(0xffc00000u);
    number[1] = 3.0f;
    EXPECT_FALSE(test::bitwise_equal(with_nan(0x7fffffffu), number));
    std::vector<float> signed_zero = with_nan(0x7fffffffu);
    signed_zero[2] = 0.0f;
    EXPECT_FALSE(test::bitwise_equal(with_nan(0x7fffffffu), signed_zero));
}

TEST(NanBits, WeightsHashReadsEveryNanAsOne) {
    const std::string cpu = io::weights_sha256({Tensor::from_vector({4}, with_nan(0xffc00000u))});
    for (uint32_t u : kNans)
        EXPECT_EQ(io::weights_sha256({Tensor::from_vector({4}, with_nan(u))}), cpu);
    // The canonical NaN's bytes are what the hash reads.
    const std::vector<float> canonical = with_nan(kCanonicalNanBits);
    EXPECT_EQ(cpu, io::sha256_hex(canonical.data(), canonical.size() * 4));
    EXPECT_NE(io::weights_sha256({Tensor::from_vector({4}, {1.0f, 3.0f, -0.0f, 2.5f})}), cpu);
}

TEST(NanBits, TrailHashAndAuditValuesReadEveryNanAsOne) {
    const uint64_t cpu = autograd::hash_tensor(Tensor::from_vector({4}, with_nan(0xffc00000u)));
    for (uint32_t u : kNans)
        EXPECT_EQ(autograd::hash_tensor(Tensor::from_vector({4}, with_nan(u))), cpu);
    EXPECT_NE(autograd::hash_tensor(Tensor::from_vector({4}, {1.0f, 0.0f, -0.0f, 2.5f})), cpu);
    FirstDifference d;
    add_value_differences(with_nan(0xffc00000u), with_nan(0x7fffffffu), d);
    EXPECT_EQ(d.differing, 0);
    add_value_differences(with_nan(0xffc00000u), {1.0f, 1.0f, -0.0f, 2.5f}, d);
    EXPECT_EQ(d.differing, 1);
}

}  // namespace
}  // namespace dt

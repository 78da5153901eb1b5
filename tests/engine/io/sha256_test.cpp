// SPDX-License-Identifier: MIT
// SHA-256 against the FIPS 180-4 / NIST example vectors, streaming vs one-shot, and the
// definition of weights_sha256 (hash of the concatenated float32 bytes).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/io/sha256.h"

namespace dt {
namespace {

TEST(Sha256, FipsVectors) {
    EXPECT_EQ(io::sha256_hex("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(io::sha256_hex(""),
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(io::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(io::sha256_hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                             "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
              "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, OneMillionA) {
    io::Sha256 h;
    const std::string chunk(1000, 'a');
    for (int i = 0; i < 1000; ++i) h.update(chunk);
    EXPECT_EQ(h.finish_hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, StreamingMatchesOneShotAtEveryBlockBoundary) {
    std::string msg;
    for (int i = 0; i < 300; ++i) msg.push_back(static_cast<char>(i * 7 + 3));
    for (std::size_t len : {0u, 1u, 55u, 56u, 57u, 63u, 64u, 65u, 119u, 120u, 128u, 300u}) {
        const std::string m = msg.substr(0, len);
        const std::string want = io::sha256_hex(m);
        for (std::size_t split : {std::size_t{0}, len / 3, len / 2, len}) {
            io::Sha256 h;
            h.update(m.data(), split);
            h.update(m.data() + split, len - split);
            EXPECT_EQ(h.finish_hex(), want) << "len " << len << " split " << split;
        }
    }
}

TEST(Sha256, UseAfterFinishThrows) {
    io::Sha256 h;
    h.update("x");
    (void)h.finish();
    EXPECT_THROW(h.update("y"), Error);
    EXPECT_THROW((void)h.finish(), Error);
}

TEST(Sha256, WeightsHashIsHashOfConcatenatedFloatBytes) {
    Tensor a = Tensor::from_vector({2, 2}, {1.0f, -2.0f, 0.5f, 3.25f});
    Tensor b = Tensor::from_vector({3}, {0.0f, -0.0f, 1e-30f});
    std::string bytes(reinterpret_cast<const char*>(a.f32()), a.nbytes());
    bytes.append(reinterpret_cast<const char*>(b.f32()), b.nbytes());
    EXPECT_EQ(io::weights_sha256({a, b}), io::sha256_hex(bytes));
    EXPECT_NE(io::weights_sha256({a, b}), io::weights_sha256({b, a}));  // order matters
    EXPECT_EQ(io::weights_sha256({}), io::sha256_hex(""));
    // Bits matter: +0 and -0 hash differently.
    Tensor z = Tensor::from_vector({1}, {0.0f});
    Tensor nz = Tensor::from_vector({1}, {-0.0f});
    EXPECT_NE(io::weights_sha256({z}), io::weights_sha256({nz}));
    EXPECT_THROW(io::weights_sha256({Tensor::from_vector_i64({1}, {1})}), DTypeError);
}

}  // namespace
}  // namespace dt

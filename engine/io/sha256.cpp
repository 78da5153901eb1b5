// SPDX-License-Identifier: MIT
// SHA-256 per FIPS 180-4: message schedule W[0..63], 64 rounds with the constants K (first 32
// bits of the fractional parts of the cube roots of the first 64 primes), big-endian words,
// padding = 0x80, zeros, 64-bit big-endian bit length.
#include "engine/io/sha256.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "engine/core/error.h"
#include "engine/core/nan_bits.h"

namespace dt::io {

namespace {

constexpr uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

// Initial hash value H(0): fractional parts of the square roots of the first 8 primes.
constexpr uint32_t kH0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                             0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

inline uint32_t rotr(uint32_t x, int n) { return std::rotr(x, n); }
inline uint32_t load_be32(const uint8_t* p) {
    return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
inline void store_be32(uint8_t* p, uint32_t v) {
    p[0] = static_cast<uint8_t>(v >> 24);
    p[1] = static_cast<uint8_t>(v >> 16);
    p[2] = static_cast<uint8_t>(v >> 8);
    p[3] = static_cast<uint8_t>(v);
}

}  // namespace

Sha256::Sha256() { std::memcpy(state_, kH0, sizeof(state_)); }

void Sha256::compress(const uint8_t* block) {
    uint32_t w[64];
    for (int t = 0; t < 16; ++t) w[t] = load_be32(block + 4 * t);
    for (int t = 16; t < 64; ++t) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
    uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
    for (int t = 0; t < 64; ++t) {
        uint32_t big_s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = h + big_s1 + ch + kK[t] + w[t];
        uint32_t big_s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = big_s0 + maj;
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    state_[0] += a;
    state_[1] += b;
    state_[2] += c;
    state_[3] += d;
    state_[4] += e;
    state_[5] += f;
    state_[6] += g;
    state_[7] += h;
}

void Sha256::update(const void* data, std::size_t n) {
    DT_CHECK(!finished_, "Sha256::update after finish (hint: use a new Sha256 per message)");
    const uint8_t* p = static_cast<const uint8_t*>(data);
    length_ += n;
    if (buffered_ > 0) {
        std::size_t take = std::min(n, std::size_t{64} - buffered_);
        std::memcpy(buffer_ + buffered_, p, take);
        buffered_ += take;
        p += take;
        n -= take;
        if (buffered_ < 64) return;
        compress(buffer_);
        buffered_ = 0;
    }
    for (; n >= 64; n -= 64, p += 64) compress(p);
    if (n > 0) {
        std::memcpy(buffer_, p, n);
        buffered_ = n;
    }
}

std::array<uint8_t, 32> Sha256::finish() {
    DT_CHECK(!finished_, "Sha256::finish called twice");
    const uint64_t bit_length = length_ * 8;
    buffer_[buffered_++] = 0x80;
    if (buffered_ > 56) {  // no room for the length: pad this block and use one more
        std::memset(buffer_ + buffered_, 0, 64 - buffered_);
        compress(buffer_);
        buffered_ = 0;
    }
    std::memset(buffer_ + buffered_, 0, 56 - buffered_);
    store_be32(buffer_ + 56, static_cast<uint32_t>(bit_length >> 32));
    store_be32(buffer_ + 60, static_cast<uint32_t>(bit_length));
    compress(buffer_);
    finished_ = true;
    std::array<uint8_t, 32> out;
    for (int i = 0; i < 8; ++i) store_be32(out.data() + 4 * i, state_[i]);
    return out;
}

std::string Sha256::finish_hex() {
    std::array<uint8_t, 32> d = finish();
    return to_hex(d.data(), d.size());
}

std::string to_hex(const uint8_t* data, std::size_t n) {
    static const char* kDigits = "0123456789abcdef";
    std::string s(2 * n, '0');
    for (std::size_t i = 0; i < n; ++i) {
        s[2 * i] = kDigits[data[i] >> 4];
        s[2 * i + 1] = kDigits[data[i] & 15];
    }
    return s;
}

std::string sha256_hex(const void* data, std::size_t n) {
    Sha256 h;
    h.update(data, n);
    return h.finish_hex();
}

std::string sha256_hex(const std::string& s) { return sha256_hex(s.data(), s.size()); }

std::string weights_sha256(const std::vector<Tensor>& tensors) {
    static_assert(std::endian::native == std::endian::little,
                  "weights_sha256 hashes the in-memory bytes, defined as little-endian");
    Sha256 h;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const Tensor& t = tensors[i];
        DT_CHECK(t.defined(), "weights_sha256: tensor ", i, " is undefined");
        DT_CHECK_T(DTypeError, t.dtype() == DType::kF32, "weights_sha256: tensor ", i,
                   " must be float32, got ", t.str());
        DT_CHECK_T(DeviceError, t.device() == Device::kCpu, "weights_sha256: tensor ", i,
                   " must be on the cpu, got ", t.str(), " (hint: copy it to the host first)");
        std::vector<uint32_t> scratch;
        h.update(canonical_float_bytes(t.f32(), static_cast<std::size_t>(t.numel()), scratch),
                 t.nbytes());
    }
    return h.finish_hex();
}

}  // namespace dt::io

// SPDX-License-Identifier: MIT
// SHA-256 (FIPS 180-4, section 6.2), written out in full so that detrain's weight hashes depend
// on no external library. Streaming: update() any number of times, then finish() once.
// weights_sha256() defines the weights hash of result.json: SHA-256 over the raw float32 bytes
// (little-endian, as stored in memory) of each tensor, concatenated in the given order, with
// nothing in between (no names, no shapes), every NaN read as 0x7fc00000 (engine/core/nan_bits.h:
// a NaN's payload depends on the hardware). Reference: FIPS 180-4 and its example vectors.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/tensor.h"

namespace dt::io {

class Sha256 {
 public:
    Sha256();
    /// Appends n bytes to the message. Throws dt::Error after finish().
    void update(const void* data, std::size_t n);
    void update(const std::string& s) { update(s.data(), s.size()); }
    /// Pads, processes the last block(s) and returns the 32-byte digest. Call once.
    std::array<uint8_t, 32> finish();
    /// finish() as 64 lowercase hex characters.
    std::string finish_hex();

 private:
    void compress(const uint8_t* block);  // one 64-byte block into state_
    uint32_t state_[8];
    uint8_t buffer_[64];
    std::size_t buffered_ = 0;  // bytes waiting in buffer_
    uint64_t length_ = 0;       // message length in bytes so far
    bool finished_ = false;
};

/// One-shot SHA-256 of a byte string, as lowercase hex.
std::string sha256_hex(const void* data, std::size_t n);
std::string sha256_hex(const std::string& s);

/// Lowercase hex of arbitrary bytes ("00ff...").
std::string to_hex(const uint8_t* data, std::size_t n);

/// SHA-256 (hex) over the float32 bytes of every tensor in order (see the file comment). Tensors
/// must be defined, float32 and on the CPU (dt::DTypeError / dt::DeviceError otherwise).
std::string weights_sha256(const std::vector<Tensor>& tensors);

}  // namespace dt::io
